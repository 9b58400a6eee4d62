# mizu — build, test, install.  `make help` lists the targets.
PREFIX   ?= /usr/local
CC       ?= cc
BUILD    ?= build
# With Open MPI's compiler wrapper and parallel HDF5 (hdf5-openmpi) present, the one binary also
# runs under mpirun (src/dist/, docs/distributed.md); without them it is the single-process build.
MPI      ?= $(shell command -v mpicc >/dev/null 2>&1 && pkg-config --exists hdf5-openmpi && echo 1)
ifeq ($(MPI),1)
PKGS      = OpenCL libcjson libpng hdf5-openmpi
MPI_CFLAGS := $(shell mpicc --showme:compile) -DMZ_MPI=1
MPI_LIBS   := $(shell mpicc --showme:link)
else
# Debian's hdf5.pc may point at the MPI build once libhdf5-openmpi-dev is installed: ask for the
# serial one by name where it exists.
PKGS      = OpenCL libcjson libpng $(shell pkg-config --exists hdf5-serial && echo hdf5-serial || echo hdf5)
endif

VERSION  := 0.1.0
GIT_REV  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

# -ffp-contract=off: host reference arithmetic must not fuse multiply-adds (determinism).
CFLAGS   ?= -O2 -g
WARN      = -std=c11 -Wall -Wextra -pedantic -Werror -Wmissing-prototypes -Wshadow -Wvla
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -DCL_TARGET_OPENCL_VERSION=120 \
            -DMIZU_VERSION='"$(VERSION)"' -DMIZU_GIT_REV='"$(GIT_REV)"' -Isrc -I$(BUILD)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CFLAGS  = $(WARN) $(CFLAGS) -ffp-contract=off $(PKG_CFLAGS) $(MPI_CFLAGS) $(CPPFLAGS)
LDLIBS     += $(PKG_LIBS) $(MPI_LIBS) -lm

# Sources live in one folder per layer (docs/ARCHITECTURE.md); objects mirror them under obj/.
SRCS     := $(sort $(wildcard src/*/*.c src/*/*/*.c))
OBJS     := $(SRCS:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/kernels_embedded.o
LIB_OBJS := $(filter-out $(BUILD)/obj/cli/main.o,$(OBJS))
KERNELS  := $(sort $(wildcard kernels/*/*.cl kernels/*/*.clh))
# Tests sit beside the layer they test (tests/scene/, tests/solvers/, ...); binaries go flat
# into $(BUILD)/tests/.
TEST_SRCS  := $(sort $(wildcard tests/*/test_*.c))
BENCH_SRCS := $(sort $(wildcard tests/bench/bench_*.c))
TESTS    := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
BENCHES  := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(BENCH_SRCS)))
TEST_HDRS := tests/test_util.h tests/test_world.h tests/test_files.h tests/bench/bench_frames.h \
             tests/render/png_read.h

.PHONY: all test bench install uninstall clean help check-deps demo fuzz sanitize valgrind
all: check-deps $(BUILD)/mizu

check-deps:
	@pkg-config --exists $(PKGS) || { echo "mizu: missing build dependencies ($(PKGS));" \
	  "run scripts/install-deps.sh" >&2; exit 1; }

$(BUILD)/mizu: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: src/%.c | $(BUILD)/obj
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Kernel sources are compiled into the binary so one file is all an HPC node needs.
$(BUILD)/kernels_embedded.c: $(KERNELS) scripts/embed-kernels.sh | $(BUILD)/obj
	scripts/embed-kernels.sh $(KERNELS) > $@.tmp && mv $@.tmp $@
# A kernel file is one string literal, longer than the 4095 characters ISO C promises; gcc and
# clang take any length.
$(BUILD)/obj/kernels_embedded.o: $(BUILD)/kernels_embedded.c
	$(CC) $(ALL_CFLAGS) -Wno-overlength-strings -c -o $@ $<

# The git revision reaches /parameters/build and --version through a stamp that changes with it.
REV_STAMP := $(BUILD)/git-rev
$(shell mkdir -p $(BUILD) && (echo '$(GIT_REV)' | cmp -s - $(REV_STAMP) || echo '$(GIT_REV)' > $(REV_STAMP)))
$(BUILD)/obj/io/h5_create.o $(BUILD)/obj/cli/main.o: $(REV_STAMP)

# Each test binary from the one source of its name under tests/*/.
vpath test_%.c $(sort $(dir $(TEST_SRCS)))
vpath bench_%.c tests/bench
$(BUILD)/tests/%: %.c $(TEST_HDRS) $(LIB_OBJS) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< $(LIB_OBJS) $(LDLIBS) $(shell pkg-config --libs cmocka)

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

# check-layers.py (docs/ARCHITECTURE.md, Layers) runs as one of the tests: an include that points
# up the layer order fails `make test`.
test: all $(TESTS)
	@scripts/run-tests.sh $(BUILD)/mizu scripts/check-layers.py $(TESTS)

bench: all $(BENCHES)
	@for b in $(BENCHES); do $$b || exit 1; done
	@if [ -n "$(MPI_LIBS)" ]; then scripts/bench-scaling.sh $(BUILD)/mizu; fi

demo: all
	$(BUILD)/mizu run scenes/dam_break_3d.json -o /tmp/mizu-demo.h5
	$(BUILD)/mizu render /tmp/mizu-demo.h5 -o /tmp/mizu-demo.png

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/mizu $(DESTDIR)$(PREFIX)/bin/mizu
	install -m 644 man/mizu.1 $(DESTDIR)$(PREFIX)/share/man/man1/mizu.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/mizu $(DESTDIR)$(PREFIX)/share/man/man1/mizu.1

clean:
	rm -rf $(BUILD)

help:
	@echo "make            build $(BUILD)/mizu"
	@echo "make test       build and run every test (PoCL CPU device)"
	@echo "make bench      benchmarks: particle-steps per second tables"
	@echo "make demo       run the 3D dam break to /tmp/mizu-demo.h5 and draw it to .png"
	@echo "make sanitize   build into $(SAN_BUILD) with ASan and UBSan, run every test"
	@echo "make valgrind   every test under valgrind memcheck (VALGRIND_TESTS= picks some)"
	@echo "make fuzz       fuzz the scene loader for FUZZ_SECONDS=$(FUZZ_SECONDS) s" \
	  "(FUZZ_TARGET=fuzz_obj: the OBJ reader)"
	@echo "make install    PREFIX=$(PREFIX): binary and man page"
	@echo "make clean"

# ---- Fuzzing, sanitizers, valgrind (docs/testing.md) -------------------------------------------
# Each builds into its own directory by running this Makefile again with BUILD, CC and CFLAGS set.
SAN_CC      ?= clang
SAN_BUILD   ?= build-san
SAN_FLAGS    = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_BUILD  ?= build-fuzz
FUZZ_TARGET ?= fuzz_scene
FUZZ_SECONDS ?= 60
FUZZ_FLAGS  ?=
FUZZ_CFLAGS  = -O1 -g $(SAN_FLAGS) -fsanitize=fuzzer-no-link -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
VALGRIND_TESTS ?= $(TESTS)

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/scene_input.h $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests -fsanitize=fuzzer -o $@ $< $(LIB_OBJS) $(LDLIBS)
# test_scene replays the kept fuzz inputs through the harness's own code.
$(BUILD)/tests/test_scene: tests/fuzz/scene_input.h

fuzz: all
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(SAN_CC) CFLAGS="$(FUZZ_CFLAGS)" \
	  $(FUZZ_BUILD)/fuzz/$(FUZZ_TARGET)
	@tests/fuzz/run.sh $(BUILD)/mizu $(FUZZ_BUILD) $(FUZZ_TARGET) $(FUZZ_SECONDS) $(FUZZ_FLAGS)

# MIZU_TEST_QUICK=1 (tests/test_util.h, skip_if_quick): the physics validations of tens of seconds
# skip themselves; `make sanitize MIZU_TEST_QUICK=0` runs them too (docs/testing.md).
# intercept_tls_get_addr=0: since the Open MPI packages are installed (binary built with or without
# MPI), clang 14's LeakSanitizer misreads glibc 2.36's dynamic-TLS vector in some runs (a "DTLS"
# block at 0x17d) and its tracer dies with signal 11 at exit. Off, LSan no longer tracks
# dynamically loaded libraries' thread-locals; mizu keeps no heap pointers there.
sanitize:
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CC=$(SAN_CC) CFLAGS="-O1 -g $(SAN_FLAGS)" \
	  all $(TESTS:$(BUILD)/%=$(SAN_BUILD)/%)
	@MIZU_TEST_QUICK=$(or $(MIZU_TEST_QUICK),1) \
	  ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0:$${ASAN_OPTIONS:-} UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
	  scripts/run-tests.sh $(SAN_BUILD)/mizu $(TESTS:$(BUILD)/%=$(SAN_BUILD)/%)

valgrind: all $(TESTS)
	@tests/sanitize/valgrind-tests.sh $(BUILD)/mizu $(VALGRIND_TESTS)

-include $(OBJS:.o=.d)
