# cudalab — build, test, lab, install.
#
#   make            build build/bin/cudalab (+ build/lib/cudalab/libcudalab_cuda.so when nvcc is found)
#   make test       set-up, build, every test that needs no GPU
#   make test-gpu   the GPU tests (GPU_TESTS=FILES: some of them); fails loudly when no GPU is found
#   make grade      (JOBS=N: N graders at once, one gradebook each, merged) autograde the sample
#                   submissions of the nbgrader course (notebooks/assignments) in
#                   $(BUILD)/grade/ and fail when a score differs from the expected one (the ps2 table
#                   for the backend %device reports: a GPU, or none)
#   make lab        set-up, build, install the kernelspec into the venv, generate the student version
#                   of the lecture notebooks (solutions stubbed out) into $(BUILD)/notebooks/ and open
#                   JupyterLab there (a notebook the student edited is kept as it is)
#   make demo       set-up, build, execute every notebooks/*.ipynb headless (GPU if present, else
#                   CPU) into $(BUILD)/demo/: the executed notebooks and their HTML export
#   make record     on a GPU machine: execute the lecture notebooks (the source version, with the
#                   exercises' solutions) and the problem sets' sources and record their results into
#                   recorded/GPU/NAME.json beside each (shown beside CPU runs); fails at once without a GPU
#   make install    PREFIX=/usr/local (default), or USER_INSTALL=1 for ~/.local and the user's
#                   Jupyter dir; installs binary, CUDA backend and kernelspec
#   make uninstall  the same PREFIX / USER_INSTALL: removes what make install installed
#   make wheel      the `pip install cudalab` wheel in $(BUILD)/wheel/ (WHEEL_DIR): the binary, the CPU
#                   runner's runtime and, when nvcc is found, the CUDA backend (for the full
#                   CUDA_ARCHS list), with their C libraries bundled by auditwheel:
#                   py3-none-manylinux_2_35_x86_64 when built on Debian 12 (scripts/build-wheel.sh)
#   make bench      protocol benchmark against ipykernel, heartbeat stalls and memory under hostile
#                   input (bench/stall.py), and GPU benchmarks when present (BENCHES=FILES: some of them)
#   make asan       the kernel built with ASan+UBSan (build-asan/)
#   make valgrind   a scripted session under valgrind memcheck
#
#   OFFLINE=1       (make test-gpu|bench|grade|record) on a GPU machine without network: the binaries prebuilt
#                   in build/, the wheels of scripts/offline-bundle.sh in .whl/TARGET, libzmq in .zmqlib
#
# Variables: NVCC (path or empty to force a CPU-only build), CUDA_ARCHS (default: the local GPUs'
# compute capabilities as nvidia-smi reports them, else Turing..Hopper: 75 80 86 89 90; make wheel
# always builds the full list), WERROR=1 (warnings are errors; CI sets it).

BUILD      ?= build
PREFIX     ?= /usr/local
PYTHON     ?= python3
VENV       ?= .venv
CUDA_ARCHS_ALL := 75 80 86 89 90
SAN        ?=
JOBS       ?= 1

comma := ,
CUDA_HOME = $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
NVCC ?= $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })

# CUDA_ARCHS not given: build for this machine's GPUs only when nvidia-smi knows them (a Colab-sized
# machine builds one architecture in a fraction of the full list's time), else for every
# architecture. Exported, so that sub-makes ask nvidia-smi no more.
ifeq ($(origin CUDA_ARCHS),undefined)
ifneq ($(NVCC),)
CUDA_ARCHS_LOCAL := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | \
                      grep -E '^ *[0-9]+\.[0-9]+ *$$' | tr -d ' .' | sort -un | tr '\n' ' ')
endif
CUDA_ARCHS := $(or $(strip $(CUDA_ARCHS_LOCAL)),$(CUDA_ARCHS_ALL))
endif
export CUDA_ARCHS

CC      ?= cc
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -fno-strict-aliasing $(WARN) -Iinclude -Ikernel -I$(BUILD)/gen $(SAN)
override LDFLAGS += $(SAN)
LDLIBS  := -lzmq -ljansson -lcrypto -ldl -lm -lpthread

CORE_SRC   := $(sort $(filter-out kernel/main.c,$(wildcard kernel/*.c kernel/*/*.c cpu/*.c cpu/*/*.c)))
MAIN_SRC   := kernel/main.c
CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ   := $(MAIN_SRC:%.c=$(BUILD)/obj/%.o)
BIN        := $(BUILD)/bin/cudalab
CUDA_LIB   := $(BUILD)/lib/cudalab/libcudalab_cuda.so
CUDA_SRC   := $(sort $(wildcard cuda/*.cu))
GENCODE    := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
# cuda/matmul_wgmma.cu uses Hopper's arch-specific instructions (wgmma, setmaxnreg, which only
# sm_90a has): for it, sm_90 becomes sm_90a. Its other images (and the PTX, for later GPUs) hold a
# stub the runtime never launches: it refuses the variant where the device or the image is not sm_90a.
GENCODE_90A := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(patsubst 90,90a,$(a)),code=sm_$(patsubst 90,90a,$(a))) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))

UNIT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

# The CPU runner (cpu/simt/runtime/): one executable that loads each student kernel's compiled
# object itself (kernel/student/host_build.c compiles the kernel against its prelude and asks it to
# audit the object). Not position independent, so the objects' 32-bit references reach it, and its
# symbols exported, so that it binds an object's calls of the runtime by name. Never built with
# $(SAN): the sanitizers' runtimes would be code the student's object could reach.
SIMT_DIR     := $(BUILD)/lib/cudalab/simt
SIMT_RUNNER  := $(SIMT_DIR)/cudalab-runner
SIMT_PRELUDE := $(SIMT_DIR)/cudalab_simt.h
SIMT_SRC     := $(sort $(wildcard cpu/simt/runtime/*.c))
SIMT_OBJ     := $(SIMT_SRC:cpu/simt/runtime/%.c=$(BUILD)/obj/simt-runtime/%.o)

SIMT_TARGETS = $(SIMT_RUNNER) $(SIMT_PRELUDE)
ifeq ($(NVCC),)
ALL_TARGETS = $(BIN) $(SIMT_TARGETS) cpu-only-note
else
ALL_TARGETS = $(BIN) $(CUDA_LIB) $(SIMT_TARGETS)
endif

all: $(ALL_TARGETS)
FORCE:
.PHONY: all setup test test-unit test-gpu grade lab student-notebooks demo record install uninstall wheel bench asan valgrind fuzz clean \
        cpu-only-note kernelspec

cpu-only-note:
	@echo "cudalab: nvcc not found: built CPU-only (every magic runs its CPU analogue)."

# V=1 shows the full commands
Q := $(if $(V),,@)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<",true)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# The CPU analogues are the hot loops of a machine without a GPU: -O3 vectorises loops whose trip
# count is known only at run time, which -O2's cost model leaves scalar (sanitizer builds keep theirs).
ifeq ($(SAN),)
$(BUILD)/obj/cpu/%.o: override CFLAGS += -O3
endif

$(BIN): $(CORE_OBJ) $(MAIN_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# One object per .cu (make -j builds them side by side, and an edit rebuilds one
# file); nvcc --threads compiles the architectures of a file in parallel. The
# object depends on the arch list, so changing CUDA_ARCHS rebuilds.
$(BUILD)/obj/cuda/%.o: cuda/%.cu $(wildcard include/cudalab/*.h cuda/*.h) $(BUILD)/cuda-archs
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $< ($(subst $(eval) ,$(comma),$(strip $(patsubst code=%,%,$(filter code=sm_%,$(subst $(comma), ,$(CU_GENCODE)))))))",true)
	$(Q)$(NVCC) -O3 -std=c++17 --threads 0 -Xcompiler -fPIC,-fvisibility=hidden -Iinclude $(CU_GENCODE) -c $< -o $@

# (GENCODE_90A for the file that needs it; a target-specific value, so the rule stays one)
CU_GENCODE = $(GENCODE)
$(BUILD)/obj/cuda/matmul_wgmma.o: CU_GENCODE = $(GENCODE_90A)

$(BUILD)/cuda-archs: FORCE
	@mkdir -p $(dir $@)
	@echo "$(CUDA_ARCHS)" | cmp -s - $@ || echo "$(CUDA_ARCHS)" > $@

$(CUDA_LIB): $(CUDA_SRC:cuda/%.cu=$(BUILD)/obj/cuda/%.o)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(NVCC) -shared $(GENCODE) -cudart static -o $@ $^ -lcublas -Xlinker -rpath,$(CUDA_HOME)/lib64

$(BUILD)/obj/simt-runtime/%.o: cpu/simt/runtime/%.c cpu/simt/runtime/internal.h cpu/simt/runtime/request.h \
                               include/cudalab/simt.h include/cudalab/cpu_model.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (runner)",true)
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude -c $< -o $@

$(SIMT_RUNNER): $(SIMT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -no-pie -rdynamic -o $@ $^ -Wl,--no-as-needed -lm -ldl

$(SIMT_PRELUDE): cpu/simt/runtime/cudalab_simt.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

# The code between show-source markers, as C strings for --show-source
# (kernel/magic/show_source.c): generated with awk, so the CPU-only build
# shows the same text that nvcc compiles. Headers first: a variant's helpers
# come before its kernels.
SHOW_SOURCE_IN := $(sort $(wildcard include/cudalab/*.h)) $(sort $(wildcard cuda/*.h)) $(CUDA_SRC) \
                  $(sort $(wildcard cpu/*.c))
SHOW_SOURCE_GEN := $(BUILD)/gen/show_source_gen.h

$(SHOW_SOURCE_GEN): scripts/show_source.awk $(SHOW_SOURCE_IN)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@",true)
	$(Q)awk -f scripts/show_source.awk $(SHOW_SOURCE_IN) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/kernel/magic/show_source.o: $(SHOW_SOURCE_GEN)

# ---- tests ----
$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@",true)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(filter %.o,$^) $(LDFLAGS) $(LDLIBS) -lcmocka

# a unit test of the CPU runner's own arithmetic links that runtime object too
$(BUILD)/tests/test_simt_counts: $(BUILD)/obj/simt-runtime/request.o

setup:
	@./scripts/setup.sh test

test-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# make test: the C unit tests, the fuzz smoke run, valgrind over a scripted
# session, the protocol suite and the %assert/%score tests against the ASan+UBSan kernel, then every Python
# suite against the release kernel: jupyter console in a pseudo-terminal and the frontends'
# conventions (Pygments lexer, nbconvert, logos, papermill), the notebooks under nbclient, the sample
# nbgrader course, a live JupyterHub with the local spawner, JupyterLab in headless Chromium,
# `%load_ext cudalab` in ipykernel, the pip wheel and the sdist in fresh virtualenvs and the release
# workflow linted (tests/package) (GPU tests, the browser test without chromium or chromedriver, the
# wheel's without PyPI, and actionlint's where it is not installed: it is not on PyPI, skip,
# saying why).
#
# Each Python suite runs twice over: first spread over PYTEST_JOBS pytest-xdist workers (two, CI's cores:
# four on two cores pushed the graders' CPU-runner launches past their 2 s limit; tests whose module
# builds a fixture once stay on one worker, tests/conftest.py), then the tests marked serial (a
# wall-clock bound, such as a heartbeat stall or a live hub's deadlines, that tests running beside them
# would break) one at a time.
PYTEST_ARGS := -m pytest -q -p no:cacheprovider
PYTEST := $(VENV)/bin/python $(PYTEST_ARGS)
PYTEST_JOBS ?= 2
ASAN_TESTS  := tests/protocol tests/magics/test_assert.py tests/magics/test_sweep_display.py tests/magics/test_recorded.py
SUITE_TESTS := tests/protocol tests/conformance tests/magics tests/frontends tests/notebooks tests/nbgrader tests/deploy \
               tests/board tests/package tests/gpu tests/browser
test: setup
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory valgrind
	@$(MAKE) --no-print-directory -j$$(nproc) asan
	CUDALAB_BIN=build-asan/bin/cudalab $(PYTEST) -n $(PYTEST_JOBS) --dist loadgroup -m "not serial" $(ASAN_TESTS)
	CUDALAB_BIN=build-asan/bin/cudalab $(PYTEST) -m serial $(ASAN_TESTS)
	$(PYTEST) -rsfE -n $(PYTEST_JOBS) --dist loadgroup -m "not serial" $(SUITE_TESTS)
	$(PYTEST) -rsfE -m serial $(SUITE_TESTS)

# ---- test-gpu, bench, grade: here (set up and built by make) or on a GPU machine without network ----
# OFFLINE=1: nothing is installed or built. The binaries are the ones in $(BUILD)/bin and $(BUILD)/lib,
# built by `make CUDA_ARCHS=90` on a machine with network; the Python packages are the wheels
# scripts/offline-bundle.sh put in $(OFFLINE_WHEELS)/TARGET, which scripts/offline-env.sh installs
# for $(PYTHON) into $(BUILD)/offline/TARGET; libzmq comes from $(OFFLINE_LIBS) (LD_LIBRARY_PATH).
# TARGET_PYTHON: the Python that runs the target ($@ in the recipe); TARGET_READY: the binaries built
# (offline: checked, and the wheels installed); TARGET_SETUP: the venv's set-up, online.
OFFLINE        ?=
OFFLINE_WHEELS ?= .whl
OFFLINE_LIBS   ?= .zmqlib
ifeq ($(OFFLINE),1)
TARGET_PYTHON   = scripts/offline-env.sh --wheels $(OFFLINE_WHEELS)/$@ --libs $(OFFLINE_LIBS) \
                  --site $(BUILD)/offline/$@ --python $(PYTHON) \
                  $(addprefix --need ,$(filter-out cpu-only-note,$(ALL_TARGETS))) -- $(PYTHON)
TARGET_READY    = @$(TARGET_PYTHON) -c ''
TARGET_SETUP   :=
else ifeq ($(filter-out 0,$(OFFLINE)),)
TARGET_PYTHON   = $(VENV)/bin/python
TARGET_READY    = @$(MAKE) --no-print-directory -j$$(nproc) all
TARGET_SETUP   := setup
else
$(error OFFLINE=$(OFFLINE): OFFLINE=1 for a GPU machine without network, else leave it out)
endif

# GPU_TESTS and BENCHES pick a part (a device call has a time limit): make test-gpu GPU_TESTS=tests/gpu/test_x.py
GPU_TESTS ?= tests/gpu
BENCHES   ?= $(filter-out bench/common.py,$(wildcard bench/*.py))

test-gpu: $(TARGET_SETUP)
	$(TARGET_READY)
	CUDALAB_REQUIRE_GPU=1 $(TARGET_PYTHON) $(PYTEST_ARGS) $(GPU_TESTS)

# nbgrader (requirements-grade.txt) on top of the lab's packages; the kernelspec and the kernel's time
# limits are set by the script (CUDALAB_KERNEL_TIMEOUT=2 ends the sample kernel that never finishes)
grade:
ifneq ($(OFFLINE),1)
	@./scripts/setup.sh lab
	@$(VENV)/bin/python -c 'import nbgrader' 2>/dev/null || \
	    $(VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-grade.txt
endif
	$(TARGET_READY)
	$(TARGET_PYTHON) tests/nbgrader/grade_samples.py --binary $(BIN) --out $(BUILD)/grade --jobs $(JOBS)

ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN="$(ASAN_FLAGS)" NVCC= CFLAGS="-O1 -g" build-asan/bin/cudalab

bench: $(TARGET_SETUP)
	$(TARGET_READY)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $(TARGET_PYTHON) $$b; done

kernelspec: all
	@./scripts/install-kernelspec.sh "$(abspath $(BIN))" "$(VENV)/share/jupyter/kernels/cudalab"

# the student version of the lecture notebooks (scripts/student_notebooks.py): notebooks/ holds the
# source version, with the exercises' solutions in nbgrader solution regions
STUDENT_NOTEBOOKS = $(BUILD)/notebooks
student-notebooks:
	$(PYTHON) scripts/student_notebooks.py --src notebooks --out $(STUDENT_NOTEBOOKS)

lab:
	@./scripts/setup.sh lab
	@$(MAKE) --no-print-directory all kernelspec student-notebooks
	$(VENV)/bin/jupyter lab --notebook-dir=$(STUDENT_NOTEBOOKS) $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

# every notebook executed headless with nbclient, then exported to HTML (scripts/demo.py)
demo:
	@./scripts/setup.sh lab
	@$(MAKE) --no-print-directory -j$$(nproc) all
	$(VENV)/bin/python scripts/demo.py --binary $(BIN) --out $(BUILD)/demo

# the lecture notebooks' and problem sets' results on this machine's GPU, into recorded/GPU/ beside each
# notebook (scripts/record.py; GPU: the device's name, e.g. h200): needs nbclient, nbformat, jupyter_client
# and pyzmq; refuses to record anything where %device reports no GPU; a notebook whose %assert fails on
# this GPU is named, exit 1. OFFLINE=1 as for test-gpu (wheels: scripts/offline-bundle.sh record).
# RECORD=notebooks/03-matrix-multiplication.ipynb records only the notebooks it names
record: $(TARGET_SETUP)
	$(TARGET_READY)
	$(TARGET_PYTHON) scripts/record.py --binary $(BIN) $(RECORD)

install: all
	@./scripts/install.sh "$(PREFIX)" "$(USER_INSTALL)" "$(BIN)" "$(if $(NVCC),$(CUDA_LIB),)"

uninstall:
	@./scripts/install.sh --uninstall "$(PREFIX)" "$(USER_INSTALL)"

# The wheel is for every GPU, whatever this machine has: the full architecture list (a later plain
# `make` on a GPU machine rebuilds cuda/ for its own GPU again)
WHEEL_DIR ?= $(BUILD)/wheel
wheel:
	@./scripts/setup.sh lab
	@$(MAKE) --no-print-directory -j$$(nproc) all CUDA_ARCHS="$(CUDA_ARCHS_ALL)"
	@./scripts/build-wheel.sh "$(BUILD)" "$(WHEEL_DIR)" "$(VENV)/bin/python"

clean:
	rm -rf $(BUILD) build-asan

-include $(CORE_OBJ:.o=.d) $(MAIN_OBJ:.o=.d)

# ==== fuzzing and valgrind ==================================================================
# (tests/fuzz/, tests/fuzz/run.sh, scripts/valgrind-session.py)
#   make fuzz-smoke   builds the libFuzzer targets with clang (ASan+UBSan) into build-fuzz/ and runs
#                     each from its seed corpus for FUZZ_SMOKE_RUNS inputs or FUZZ_SMOKE_SECONDS,
#                     whichever ends first; a crash, leak or timeout fails. Without a clang that
#                     links -fsanitize=fuzzer it says why and succeeds.
#   make fuzz         each target for FUZZ_SECONDS (default 600), growing tests/fuzz/corpus/<t>/;
#                     FUZZ_TARGETS="cell wire" picks targets. Fails when clang is missing.
#   make valgrind     a scripted Jupyter session, the kernel and its worker under memcheck.
FUZZ_CC            ?= $(shell command -v clang-14 2>/dev/null || command -v clang 2>/dev/null)
FUZZ_BUILD         := build-fuzz
FUZZ_TARGETS       ?= wire conn cell frame expr chain http
FUZZ_SECONDS       ?= 600
FUZZ_SMOKE_RUNS    ?= 200000
FUZZ_SMOKE_SECONDS ?= 15
# the include paths and defines of the main build, clang's own warnings (never -Werror here)
FUZZ_CFLAGS         = -O1 -g -std=c11 -fno-strict-aliasing -Wall -Wextra -Wno-unused-parameter \
                      $(filter -I% -D%,$(CFLAGS)) -fno-omit-frame-pointer \
                      -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJ           := $(CORE_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB           := $(FUZZ_BUILD)/libcudalab-fuzz.a
FUZZ_BINS          := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_ENV           := FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) \
                      FUZZ_SMOKE_RUNS=$(FUZZ_SMOKE_RUNS) FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS)

.PHONY: fuzz-smoke fuzz-build fuzz-clean

# kernel objects with coverage for libFuzzer; the targets link what they need from one archive
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<",true)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/obj/kernel/magic/show_source.o: $(SHOW_SOURCE_GEN)

$(FUZZ_LIB): $(FUZZ_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB)
	@$(if $(Q),echo "  FUZZLD  $@",true)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) $(LDLIBS)

fuzz-build:
	@tests/fuzz/run.sh probe "$(FUZZ_CC)" >&2 || { echo "fuzz-build: no usable clang" >&2; exit 1; }
	@$(MAKE) --no-print-directory -j$$(nproc 2>/dev/null || echo 2) $(FUZZ_BINS)

fuzz-smoke:
	@why=$$(tests/fuzz/run.sh probe "$(FUZZ_CC)") || { echo "fuzz-smoke: skipped: $$why"; exit 0; }; \
	$(MAKE) --no-print-directory fuzz-build && $(FUZZ_ENV) tests/fuzz/run.sh smoke $(FUZZ_TARGETS)

fuzz:
	@why=$$(tests/fuzz/run.sh probe "$(FUZZ_CC)") || { echo "fuzz: cannot fuzz: $$why" >&2; exit 1; }; \
	$(MAKE) --no-print-directory fuzz-build && $(FUZZ_ENV) tests/fuzz/run.sh long $(FUZZ_TARGETS)

fuzz-clean:
	rm -rf $(FUZZ_BUILD)

valgrind: setup
	@$(MAKE) --no-print-directory -j$$(nproc) all
	$(VENV)/bin/python scripts/valgrind-session.py --binary $(BIN)

-include $(FUZZ_OBJ:.o=.d)
# ==== end of fuzzing and valgrind ===========================================================
