// Device in the core: parsing, printing, options, and what a machine without a GPU says. These
// run everywhere; tests that need a GPU are in the other files here and skip without one.

#include <gtest/gtest.h>

#include "tally/tally.h"

using namespace tally;

TEST(Device, ParsesLibtorchSpellings) {
  EXPECT_EQ(Device("cpu"), Device(kCPU));
  EXPECT_EQ(Device("cuda"), Device(kCUDA, 0));
  EXPECT_EQ(Device("cuda:3").index(), 3);
  EXPECT_TRUE(Device("cuda:1").is_cuda());
  EXPECT_EQ(Device(kCUDA, 2).str(), "cuda:2");
  EXPECT_EQ(Device(kCPU).str(), "cpu");
}

TEST(Device, RejectsMalformedStrings) {
  EXPECT_THROW(Device("gpu"), ValueError);
  EXPECT_THROW(Device("cuda:"), ValueError);
  EXPECT_THROW(Device("cuda:x"), ValueError);
  EXPECT_THROW(Device("cuda:-1"), ValueError);
  EXPECT_THROW(Device("cpu:1"), ValueError);
  try {
    Device("tpu:0");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("tpu:0"), std::string::npos) << e.what();
  }
}

TEST(Device, CpuTensorsAndOptions) {
  Tensor x = ones({2, 3});
  EXPECT_EQ(x.device(), Device(kCPU));
  EXPECT_TRUE(x.is_cpu());
  EXPECT_FALSE(x.is_cuda());
  EXPECT_TRUE(x.to(Device("cpu")).is_same(x));  // already there: no copy
  Tensor y = ones({2}, TensorOptions().dtype(kBFloat16).device(Device(kCPU)));
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_EQ(zeros_like(y).dtype(), kBFloat16);
  EXPECT_EQ(full_like(y, 2, kFloat64).dtype(), kFloat64);
}

TEST(Device, WithoutAGpuCudaTensorsRaiseAClearError) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU: the no-GPU error path cannot be reached";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_EQ(cuda::memory_allocated(), 0);
  try {
    ones({2}).to(Device("cuda:0"));
    FAIL() << "a CUDA tensor was made without a GPU";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("CUDA") != std::string::npos) << msg;
  }
  try {  // refused by the CUDA layer's allocator, which it installed in core (core/device_allocator.h)
    zeros({3}, kCUDA);
    FAIL() << "a CUDA tensor was made without a GPU";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()).find("no allocator is installed"), std::string::npos) << e.what();
  }
  try {  // the driver's own words were "CUDA driver version is insufficient for CUDA runtime version"
    ones({2}).pin_memory();
    FAIL() << "pinned memory was made without a GPU";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();  // a build with CUDA on a machine without a GPU, or a build without CUDA
    EXPECT_TRUE(msg.find("pin_memory: no CUDA GPU is available on this machine") != std::string::npos ||
                msg.find("this tally was built without CUDA") != std::string::npos)
        << msg;
  }
}
