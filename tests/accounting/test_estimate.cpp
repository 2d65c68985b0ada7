// Napkin math against the lecture's numbers, the ZeRO paper's worked example, hand counts of
// transformer parameters, FLOPs and saved activations, and the `tally estimate --json` CLI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tally/machine/device_specs.h"
#include "tally/accounting/estimate.h"
#include "tally/error/error.h"

namespace tally::accounting {
namespace {

// --- the lecture's questions --------------------------------------------------------------------

TEST(TrainTime, LectureSeventyBillionOnFifteenTrillionTokens) {
  const auto r = train_time(70e9, 15e12, machine::promised_peak(machine::device_spec("h100")), 1024, 0.5);
  EXPECT_EQ(r.total_flops.value, 6 * 70e9 * 15e12);
  EXPECT_EQ(r.flops_per_day.value, 1979e12 / 2 * 0.5 * 1024 * 60 * 60 * 24);
  EXPECT_NEAR(r.days.value, 143.9, 0.05);
  EXPECT_EQ(r.days.formula, "total_flops / flops_per_day");
  EXPECT_EQ(r.peak.label(), "H100 SXM bfloat16 dense: 989.5 TFLOP/s (promised)");
}

TEST(TrainTime, RejectsBadInputs) {
  const auto h100 = machine::promised_peak(machine::device_spec("h100"));
  EXPECT_THROW(train_time(-70e9, 15e12, h100, 1024, 0.5), ValueError);
  EXPECT_THROW(train_time(70e9, 0, h100, 1024, 0.5), ValueError);
  EXPECT_THROW(train_time(70e9, 15e12, h100, 0, 0.5), ValueError);
  EXPECT_THROW(train_time(70e9, 15e12, h100, 1024, 0.0), ValueError);
  EXPECT_THROW(train_time(70e9, 15e12, h100, 1024, 1.5), ValueError);
}

TEST(MaxParams, LectureEightH100sNaiveAdamW) {
  const Recipe& fp32 = recipe("fp32-adamw");
  EXPECT_EQ(fp32.bytes_per_param(), 4 + 4 + (4 + 4));
  const auto r = max_params(machine::device_spec("h100").memory_bytes, 8, fp32);
  EXPECT_EQ(r.max_params.value, 40e9);
  EXPECT_NE(r.not_included.find("activations"), std::string::npos);
  // The lecture's caveat 1: bf16 params/grads plus a float32 master copy save no state memory.
  const Recipe& mixed = recipe("bf16-mixed-adamw");
  EXPECT_EQ(mixed.bytes_per_param(), 2 + 2 + 4 + (4 + 4));
  EXPECT_EQ(max_params(80e9, 8, mixed).max_params.value, 40e9);
}

TEST(MaxParams, ZeroStagesShardStatesOverTheDevices) {
  const Recipe& fp32 = recipe("fp32-adamw");  // p=4, g=4, w=0, o=8
  const auto bytes = [&](int stage) { return max_params(80e9, 8, fp32, stage).bytes_per_param_per_device.value; };
  EXPECT_EQ(bytes(0), 16.0);             // full replica on every device
  EXPECT_EQ(bytes(1), 4 + 4 + 8 / 8.0);  // moments sharded
  EXPECT_EQ(bytes(2), 4 + (4 + 8) / 8.0);
  EXPECT_EQ(bytes(3), 16 / 8.0);
  EXPECT_EQ(max_params(80e9, 8, fp32, 0).max_params.value, 5e9);
  EXPECT_EQ(max_params(80e9, 8, fp32, 1).max_params.value, std::floor(80e9 / 9));  // whole parameters
  EXPECT_EQ(max_params(80e9, 8, fp32, 2).max_params.value, std::floor(80e9 / 5.5));
  // Stage 3 holds every state once across the devices: the lecture's pooled count.
  EXPECT_EQ(max_params(80e9, 8, fp32, 3).max_params.value, 40e9);
}

TEST(MaxParams, ZeroPaperFigureOne) {
  // Rajbhandari et al. (2020), Figure 1: 7.5B parameters, mixed-precision Adam (K = 12), N_d = 64:
  // 120 GB, 31.4 GB, 16.6 GB and 1.9 GB per device for stages 0-3.
  const Recipe& mixed = recipe("bf16-mixed-adamw");
  const auto per_device = [&](int stage) {
    return 7.5e9 * max_params(80e9, 64, mixed, stage).bytes_per_param_per_device.value;
  };
  EXPECT_EQ(per_device(0), 120e9);
  EXPECT_NEAR(per_device(1), 31.4e9, 0.05e9);
  EXPECT_NEAR(per_device(2), 16.6e9, 0.05e9);
  EXPECT_NEAR(per_device(3), 1.9e9, 0.05e9);
}

TEST(MaxParams, RejectsBadInputs) {
  const Recipe& fp32 = recipe("fp32-adamw");
  EXPECT_THROW(max_params(80e9, 8, fp32, 4), ValueError);
  EXPECT_THROW(max_params(80e9, 8, fp32, -1), ValueError);
  EXPECT_THROW(max_params(-80e9, 8, fp32), ValueError);
  EXPECT_THROW(max_params(80e9, 0, fp32), ValueError);
  try {
    recipe("fp8-lion");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("known recipes: fp32-adamw, bf16-mixed-adamw"), std::string::npos) << e.what();
  }
}

TEST(TensorBytes, LectureGpt3FeedForwardMatrix) {
  const auto r = tensor_bytes({4 * 12288, 12288}, kFloat32);
  EXPECT_EQ(r.numel.value, 603979776.0);
  EXPECT_EQ(r.bytes.value, 2304.0 * 1024 * 1024);
  EXPECT_EQ(r.bytes.value, 2415919104.0);
  EXPECT_EQ(tensor_bytes({4 * 12288, 12288}, kBFloat16).bytes.value, 1152.0 * 1024 * 1024);
}

TEST(TensorBytes, EdgeShapesAndErrors) {
  EXPECT_EQ(tensor_bytes({}, kFloat64).bytes.value, 8.0);  // a 0-d tensor holds one element
  EXPECT_EQ(tensor_bytes({3, 0, 5}, kFloat32).bytes.value, 0.0);
  EXPECT_EQ(tensor_bytes({7}, kFloat8_e4m3fn).bytes.value, 7.0);
  EXPECT_THROW(tensor_bytes({-1, 4}, kFloat32), ValueError);
  EXPECT_THROW(tensor_bytes({int64_t{1} << 40, int64_t{1} << 40}, kFloat32), ValueError);
}

TEST(TensorBytes, DtypeNames) {
  EXPECT_EQ(dtype_from_name("float32"), kFloat32);
  EXPECT_EQ(dtype_from_name("torch.bfloat16"), kBFloat16);
  EXPECT_EQ(dtype_from_name("bf16"), kBFloat16);
  EXPECT_EQ(dtype_from_name("half"), kFloat16);
  EXPECT_EQ(dtype_from_name("Float8_E5M2"), kFloat8_e5m2);
  EXPECT_EQ(dtype_from_name("long"), kInt64);
  EXPECT_THROW(dtype_from_name("float128"), ValueError);
}

// --- transformer ---------------------------------------------------------------------------------

TEST(Transformer, TinyConfigByHand) {
  // L=2, d=64, a=4, V=100, T=16, b=2, every tensor counted on its own.
  const auto r = transformer({.layers = 2, .d_model = 64, .heads = 4, .vocab = 100, .seq_len = 16, .batch = 2},
                             recipe("bf16-mixed-adamw"));
  const double wte = 100 * 64, wpe = 16 * 64;
  const double ln1 = 64 + 64, qkv = 64 * 192 + 192, proj = 64 * 64 + 64, ln2 = 64 + 64, fc = 64 * 256 + 256,
               fc_proj = 256 * 64 + 64, ln_f = 64 + 64;
  const double block = ln1 + qkv + proj + ln2 + fc + fc_proj;
  EXPECT_EQ(r.params_per_layer.value, block);
  EXPECT_EQ(r.params.value, wte + wpe + 2 * block + ln_f);
  EXPECT_EQ(r.params.value, 107520.0);
  EXPECT_EQ(r.non_embedding_params.value, 2 * block + ln_f);

  // Matmuls per token, forward: 2 per weight element of qkv, proj, fc, fc_proj and lm_head;
  // attention: QKᵀ and P·V over 16 positions; training is 3 × forward.
  const double weight_macs = 2 * (64 * 192 + 64 * 64 + 64 * 256 + 256 * 64) + 64 * 100;
  EXPECT_EQ(r.matmul_flops_per_token.value, 3 * 2 * weight_macs);
  EXPECT_EQ(r.attention_flops_per_token.value, 3 * 2 * (2 * 16 * 64 + 2 * 16 * 64));
  EXPECT_EQ(r.attention_flops_per_token_causal.value, r.attention_flops_per_token.value / 2);
  EXPECT_EQ(r.flops_per_token.value, r.matmul_flops_per_token.value + r.attention_flops_per_token.value);
  EXPECT_EQ(r.flops_per_step.value, r.flops_per_token.value * 2 * 16);
  EXPECT_EQ(r.six_n_flops_per_token.value, 6 * 107520.0);

  // Saved per layer in bf16: 16·b·T·d + a·b·T² elements of 2 bytes.
  EXPECT_EQ(r.activation_bytes_per_layer.value, (16 * 2 * 16 * 64 + 4 * 2 * 16 * 16) * 2.0);
  EXPECT_EQ(r.activation_bytes_head.value, (2 * 2 * 16 * 64 + 2 * 16 * 100) * 2.0);
  EXPECT_EQ(r.activation_bytes.value, 2 * r.activation_bytes_per_layer.value + r.activation_bytes_head.value);
  EXPECT_EQ(r.state_bytes.value, 16 * 107520.0);
  EXPECT_EQ(r.total_bytes.value, r.state_bytes.value + r.activation_bytes.value);
}

TEST(Transformer, SavedTensorsAreKorthikantiWithoutDropout) {
  // Korthikanti et al.'s 34·s·b·h + 5·a·s²·b (16-bit) = our list in 2 bytes + two 1-byte dropout
  // masks of [b, s, h] + P's dropout mask (1 byte) and dropout output (2 bytes).
  const int64_t T = 128, b = 3, d = 256, a = 8;
  const auto r = transformer({.layers = 4, .d_model = d, .heads = a, .vocab = 1000, .seq_len = T, .batch = b},
                             recipe("bf16-mixed-adamw"));
  const double dropout_bytes = 2.0 * T * b * d + 3.0 * a * T * T * b;
  EXPECT_EQ(r.activation_bytes_per_layer.value + dropout_bytes, r.korthikanti_bytes_per_layer.value);
  // float32 activations double every saved byte.
  const auto f = transformer(r.config, recipe("fp32-adamw"));
  EXPECT_EQ(f.activation_bytes_per_layer.value, 2 * r.activation_bytes_per_layer.value);
}

TEST(Transformer, Gpt2SmallHas124Million) {
  // GPT-2 small: L=12, d=768, a=12, V=50257, 1024 positions, lm_head tied to wte.
  const TransformerConfig gpt2{.layers = 12, .d_model = 768, .heads = 12, .vocab = 50257, .seq_len = 1024, .batch = 1};
  const auto r = transformer(gpt2, recipe("fp32-adamw"));
  EXPECT_EQ(r.params.value, 124439808.0);
  EXPECT_EQ(r.non_embedding_params.value, 124439808.0 - 50257 * 768 - 1024 * 768);
  auto untied = gpt2;
  untied.tied_embeddings = false;
  EXPECT_EQ(transformer(untied, recipe("fp32-adamw")).params.value, 124439808.0 + 50257 * 768);
  // Kaplan's count leaves out embeddings and biases and halves attention.
  EXPECT_EQ(r.kaplan_flops_per_token.value, 6 * 12 * 12 * 768.0 * 768 + 6 * 12 * 1024 * 768.0);
}

TEST(Transformer, RejectsBadConfigs) {
  const Recipe& rc = recipe("fp32-adamw");
  EXPECT_THROW(transformer({.layers = 2, .d_model = 64, .heads = 5, .vocab = 100, .seq_len = 16, .batch = 1}, rc), ValueError);
  EXPECT_THROW(transformer({.layers = 0, .d_model = 64, .heads = 4, .vocab = 100, .seq_len = 16, .batch = 1}, rc), ValueError);
  EXPECT_THROW(transformer({.layers = 2, .d_model = 64, .heads = 4, .vocab = -1, .seq_len = 16, .batch = 1}, rc), ValueError);
}

// --- the CLI ---------------------------------------------------------------------------------------

// The tally executable: $TALLY_CLI, else the one CMake built beside this test.
std::filesystem::path cli_path() {
  if (const char* env = std::getenv("TALLY_CLI")) return env;
  return TALLY_CLI_PATH;
}

struct CliRun {
  int exit_code;
  std::string output;
};

CliRun run_cli(const std::string& args) {
  const std::string cmd = cli_path().string() + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class EstimateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(cli_path()))
      FAIL() << "no tally executable at " << cli_path() << " (build tally_cli, or set TALLY_CLI)";
  }
  static nlohmann::json json_of(const std::string& args) {
    const CliRun r = run_cli("estimate " + args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output);
  }
};

TEST_F(EstimateCli, TrainTime) {
  const auto j = json_of("train-time --params 70e9 --tokens 15e12 --device h100 --count 1024 --mfu 0.5");
  EXPECT_NEAR(j["results"]["days"]["value"].get<double>(), 143.9, 0.05);
  EXPECT_EQ(j["results"]["total_flops"]["formula"], "6·N·D");
  EXPECT_EQ(j["inputs"]["peak"]["flops_per_sec"].get<double>(), 989.5e12);
  EXPECT_EQ(j["inputs"]["peak"]["sparse"], false);
}

// GPT-2 small on 8 H100s over NVLink: 6·124e6·524288 FLOPs over 8·989.5e12·0.5 is 98.6 ms of
// computation; the ring sends 2·7/8·124e6·4 bytes = 868 MB, 1.93 ms at 450 GB/s.
TEST_F(EstimateCli, DataParallel) {
  const auto j = json_of("data-parallel --params 124e6 --tokens-per-step 524288 --bandwidth 450e9 --count 8 --mfu 0.5");
  const auto& r = j["results"];
  EXPECT_NEAR(r["compute_s"]["value"].get<double>(), 6 * 124e6 * 524288 / (8 * 989.5e12 * 0.5), 1e-12);
  EXPECT_EQ(r["comm_bytes"]["value"].get<double>(), 2.0 * 7 / 8 * 124e6 * 4);
  EXPECT_NEAR(r["comm_s"]["value"].get<double>(), 868e6 / 450e9, 1e-9);
  EXPECT_NEAR(r["mfu_overlapped"]["value"].get<double>(), 0.5, 1e-12);  // the all-reduce hides behind backward
  EXPECT_NEAR(r["mfu_serial"]["value"].get<double>(), 0.5 * r["compute_s"]["value"].get<double>() /
                                                           (r["compute_s"]["value"].get<double>() + r["comm_s"]["value"].get<double>()), 1e-12);
  // Over a slow link the all-reduce outlasts the computation.
  const auto slow = json_of("data-parallel --params 124e6 --tokens-per-step 524288 --bandwidth 1e9 --count 8");
  EXPECT_LT(slow["results"]["mfu_overlapped"]["value"].get<double>(), 0.2);
  EXPECT_NE(run_cli("estimate data-parallel --params 124e6 --tokens-per-step 524288 --bandwidth 0").exit_code, 0);
}

TEST_F(EstimateCli, MaxParams) {
  EXPECT_EQ(json_of("max-params --device h100 --count 8 --recipe fp32-adamw")["results"]["max_params"]["value"].get<double>(), 40e9);
  EXPECT_EQ(json_of("max-params --memory 80e9 --count 8 --zero 0")["results"]["max_params"]["value"].get<double>(), 5e9);
  const auto j = json_of("max-params --device h100 --count 8 --recipe bf16-mixed-adamw --zero 3");
  EXPECT_EQ(j["results"]["max_params"]["value"].get<double>(), 40e9);
  EXPECT_NE(j["notes"][0].get<std::string>().find("activations"), std::string::npos);
}

TEST_F(EstimateCli, TransformerAndTensor) {
  const auto t = json_of("transformer --layers 12 --d-model 768 --heads 12 --vocab 50257 --seq-len 1024 --batch 8");
  EXPECT_EQ(t["results"]["params"]["value"].get<double>(), 124439808.0);
  EXPECT_EQ(t["inputs"]["saved_per_layer"].size(), 10u);
  // The model itself, run on the meta device, agrees with the formula (tied and untied).
  for (const char* untied : {"", " --untied"}) {
    const auto m = json_of(std::string("transformer --layers 2 --d-model 64 --heads 4 --vocab 100 --seq-len 16 --batch 2") + untied);
    EXPECT_EQ(m["inputs"]["meta_run"]["params"].get<double>(), m["results"]["params"]["value"].get<double>()) << untied;
    // The weight matmuls exactly; attention (one op, T = 16: a single causal block over all T×T
    // scores) its full products plus its softmax (6 per score forward, 6 + 5 backward).
    EXPECT_EQ(m["inputs"]["meta_run"]["matmul_flops_per_step"].get<double>(),
              m["results"]["matmul_flops_per_token"]["value"].get<double>() * 2 * 16)
        << untied;
    EXPECT_EQ(m["inputs"]["meta_run"]["attention_flops_per_step"].get<double>(),
              m["results"]["attention_flops_per_token"]["value"].get<double>() * 2 * 16 * 3.5 / 3 + 17.0 * 2 * 2 * 4 * 16 * 16)
        << untied;
    EXPECT_GT(m["inputs"]["meta_run"]["peak_bytes_by_category"]["activations"].get<double>(), 0) << untied;
  }
  // A step past the ledger's 64-bit counts is not run (its counts wrapped: a 405B-like model's
  // matmuls printed as 4.17e18 beside the formula's 4.1e19, larger ones as negative numbers).
  const auto huge = json_of("transformer --layers 126 --d-model 16384 --heads 128 --vocab 128256 --seq-len 8192 --batch 2048");
  EXPECT_FALSE(huge["inputs"]["meta_run"].contains("matmul_flops_per_step"));
  EXPECT_NE(huge["inputs"]["meta_run"]["skipped"].get<std::string>().find("past what the ledger's 64-bit counters hold"), std::string::npos);
  EXPECT_GT(huge["results"]["matmul_flops_per_token"]["value"].get<double>(), 0);
  const auto b = json_of("tensor --shape 4*12288,12288 --dtype float32");
  EXPECT_EQ(b["results"]["bytes"]["value"].get<double>(), 2415919104.0);
  EXPECT_EQ(json_of("tensor --shape 49152,12288")["results"]["bytes"]["value"].get<double>(), 2415919104.0);
}

TEST_F(EstimateCli, BadInputExitsWithOneAndAMessage) {
  for (const char* args : {"train-time --params 70e9 --tokens 15e12 --device x100",
                           "train-time --params -70e9 --tokens 15e12", "max-params --device h100 --recipe sgd",
                           "max-params --device h100 --zero 5", "tensor --shape 4,-3", "tensor --shape 4,x",
                           "tensor --shape 4 --dtype float128",
                           "transformer --layers 2 --d-model 64 --heads 5 --vocab 100 --seq-len 16 --batch 1"}) {
    const CliRun r = run_cli(std::string("estimate ") + args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("tally: error: "), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_NE(run_cli("estimate train-time --params 1 --tokens 1 --device x100").output.find("known devices"), std::string::npos);
  // --memory 0 is a bad value, not a missing option.
  const CliRun zero = run_cli("estimate max-params --memory 0");
  EXPECT_EQ(zero.exit_code, 1) << zero.output;
  EXPECT_EQ(zero.output.find("give --device or --memory"), std::string::npos) << zero.output;
  EXPECT_NE(zero.output.find("must be positive"), std::string::npos) << zero.output;
}

}  // namespace
}  // namespace tally::accounting
