# Runs COMMAND with ARGS (a |-separated list) and passes when it exits non-zero, prints nothing on
# stdout, and its stderr matches the regular expression EXPECT (one line: "tally: error: ...").
#   cmake -DCOMMAND=... -DARGS=a|b -DEXPECT=regex -P expect_cli_error.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${COMMAND} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit ${rc}; stderr: ${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0; stdout: ${out}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "expected nothing on stdout, got: ${out}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "stderr does not match '${EXPECT}'")
endif()
