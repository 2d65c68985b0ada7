// Built without MPI (CMake did not find it): one process only.

#include "tally/dist/process_group.h"
#include "tally/error/error.h"

namespace tally::dist {

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  throw DistError(
      "this process was started by mpirun, but this tally was built without MPI: install Open MPI's development files "
      "(Debian: libopenmpi-dev) and configure and build again");
}

}  // namespace tally::dist
