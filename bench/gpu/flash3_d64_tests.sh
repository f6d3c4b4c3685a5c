#!/bin/bash
# Session 21: the D 64 flash3 forward tests on a D 64-only standalone build (flash3_gpu_run.sh with
# F3_DIMS=64: the quickest GPU check of a D 64 change). Usage: OUT=... bash bench/gpu/flash3_d64_tests.sh
F3_DIMS=64 F3_TEST_SHARDS=${F3_TEST_SHARDS:-8} F3_TEST_FILTER='*_d64_*:*FastDiv*' F3_SANITIZE=0 \
  F3_SASS_DUMP=0 F3_BENCH=0 bash bench/gpu/flash3_gpu_run.sh
