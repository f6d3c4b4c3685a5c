# Installs the build tree BUILD_DIR into WORK/prefix, then configures, builds and runs the
# consumer project in SRC against it: find_package(attnkit) -> attnkit::attnkit must work.
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${WORK}/prefix"
    "${CMAKE_COMMAND};-S;${SRC};-B;${WORK}/consumer;-DCMAKE_PREFIX_PATH=${WORK}/prefix;-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${WORK}/consumer"
    "${WORK}/consumer/quickstart")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test step failed (${rc}): ${step}\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${out}")
