# The two commands: `make bench` and `make test`. Everything else is CMake.
#   make bench [BENCH_ARGS="--tokens 512 --wtype q4_K"]
#   make test [SANITIZE=1] [CUDA=ON|OFF|AUTO]
#   make install [PREFIX=/usr/local]
BUILD    ?= build
SANITIZE ?= 0
CUDA     ?= AUTO
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
BENCH_ARGS ?=

# The ASan/UBSan build checks the host code (the CPU backend, the reference,
# GGUF, the API); the CUDA kernels have compute-sanitizer instead, and nvcc's
# device link does not take the host sanitizer flags, so it builds without CUDA.
ifeq ($(SANITIZE),1)
  BUILD := $(BUILD)-asan
  SAN_FLAG := -DMOE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  CUDA := OFF
endif

.PHONY: all build bench test install deps clean

all: build

deps:
	@./scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DMOE_CUDA=$(CUDA) $(SAN_FLAG)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The main job: a Qwen3-30B-A3B-shaped layer on the best backend available.
bench: deps build
	./$(BUILD)/moe-bench $(BENCH_ARGS)

test: deps build
	BUILD=$(BUILD) ./scripts/run_tests.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan
