# mizu — build, test, install.  `make help` lists the targets.
PREFIX   ?= /usr/local
CC       ?= cc
BUILD    ?= build
PKGS      = OpenCL libcjson hdf5

VERSION  := 0.1.0
GIT_REV  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

# -ffp-contract=off: host reference arithmetic must not fuse multiply-adds (determinism).
CFLAGS   ?= -O2 -g
WARN      = -std=c11 -Wall -Wextra -pedantic -Werror -Wmissing-prototypes -Wshadow -Wvla
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -DCL_TARGET_OPENCL_VERSION=120 \
            -DMIZU_VERSION='"$(VERSION)"' -DMIZU_GIT_REV='"$(GIT_REV)"' -Isrc -I$(BUILD)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CFLAGS  = $(WARN) $(CFLAGS) -ffp-contract=off $(PKG_CFLAGS) $(CPPFLAGS)
LDLIBS     += $(PKG_LIBS) -lm

SRCS     := $(wildcard src/*.c)
OBJS     := $(SRCS:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/kernels_embedded.o
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
KERNELS  := $(sort $(wildcard kernels/*.cl kernels/*.clh))
TESTS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_*.c))
BENCHES  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/bench_*.c))

.PHONY: all test bench install uninstall clean help check-deps demo
all: check-deps $(BUILD)/mizu

check-deps:
	@pkg-config --exists $(PKGS) || { echo "mizu: missing build dependencies ($(PKGS));" \
	  "run scripts/install-deps.sh" >&2; exit 1; }

$(BUILD)/mizu: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: src/%.c | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Kernel sources are compiled into the binary so one file is all an HPC node needs.
$(BUILD)/kernels_embedded.c: $(KERNELS) scripts/embed-kernels.sh | $(BUILD)/obj
	scripts/embed-kernels.sh $(KERNELS) > $@.tmp && mv $@.tmp $@
# A kernel file is one string literal, longer than the 4095 characters ISO C promises; gcc and
# clang take any length.
$(BUILD)/obj/kernels_embedded.o: $(BUILD)/kernels_embedded.c
	$(CC) $(ALL_CFLAGS) -Wno-overlength-strings -c -o $@ $<

# Git revision changes must reach the binary's /parameters/build record.
$(BUILD)/obj/version.o: .FORCE
.FORCE:

$(BUILD)/tests/%: tests/%.c tests/test_util.h tests/test_world.h tests/bench_frames.h $(LIB_OBJS) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< $(LIB_OBJS) $(LDLIBS) $(shell pkg-config --libs cmocka)

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

test: all $(TESTS)
	@scripts/run-tests.sh $(BUILD)/mizu $(TESTS)

bench: all $(BENCHES)
	@for b in $(BENCHES); do $$b || exit 1; done

demo: all
	$(BUILD)/mizu run scenes/falling_block.json -o /tmp/mizu-demo.h5

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
	@echo "make demo       run the default scene to /tmp/mizu-demo.h5"
	@echo "make install    PREFIX=$(PREFIX): binary and man page"
	@echo "make clean"

-include $(OBJS:.o=.d)
