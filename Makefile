# kprog top-level build. `make` builds everything; `make check` runs all
# tests (native, then one VM boot) and ends with `N passed, N failed`;
# `make demo` runs the quick overlap preset with and without kprog in
# the VM; `make microbench` and `make latency` the other benchmarks there;
# `make check-twonode` the soft-RoCE bench in one VM and across two.
# They call scripts/setup first, so they work on a fresh machine.

ifeq ($(KVER),)
KVER = $(shell ls -1 /lib/modules 2>/dev/null | while read v; do \
	  [ -e /lib/modules/$$v/build/Makefile ] && echo $$v; done | sort -V | tail -n1)
endif
KDIR ?= /lib/modules/$(KVER)/build
# Not exported: `make check` on a fresh machine computes these before
# scripts/setup has installed the headers; sub-makes compute them afresh.

USER_DIRS := libshim bench tests/selftests tests/mpi tests/twonode

.PHONY: all module user $(USER_DIRS) setup check check-huge check-twonode overlap-twonode demo microbench latency checkpatch kcore clean

all: module user

setup:
	scripts/setup

module:
	@[ -f $(KDIR)/Makefile ] || { echo "no kernel headers in $(KDIR): run scripts/setup" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

user: $(USER_DIRS)

$(USER_DIRS):
	$(MAKE) -C $@

check: setup
	$(MAKE) all
	scripts/check

demo: setup
	$(MAKE) all
	scripts/demo

# messages above 2 GiB and 4 GiB under the shim (about 10 minutes)
check-huge: setup
	$(MAKE) all
	scripts/vm-run --mem 14336 -- tests/mpi/run-huge

# The soft-RoCE test bench (not part of `make check`): one VM with rxe over a
# veth pair (scripts/vm-run --rxe), then two VMs joined by a link
# (scripts/vm-run --nodes 2): perftest, Open MPI over UCX/rxe across the
# nodes, plain and under the shim; tests/mpi with the ibverbs transport forced
# in one VM and across the two; a peer killed mid-transfer (scripts/check-twonode);
# ends with `N passed, N failed`.
check-twonode: setup
	$(MAKE) all
	scripts/check-twonode

# The overlap and latency benchmarks across the two VMs: plain Open MPI over
# UCX/rxe and kprog with its ibverbs transport side by side (scripts/twonode-bench)
overlap-twonode: setup
	$(MAKE) all
	scripts/twonode-bench

# the seed-001 microbenchmarks (interrupt cost, progress threads) in the VM
microbench: setup
	$(MAKE) all
	scripts/microbench

# seed 004: ping-pong latency, latency vs number of processes, message rate,
# plain Open MPI and kprog side by side in the VM (quick preset)
latency: setup
	$(MAKE) all
	scripts/latency

# Unit tests of kmod/*.c compiled in user space against the kernel headers,
# with mocks, ASan/UBSan and gcov (tests/kcore/README); no VM, seconds.
kcore:
	$(MAKE) -C tests/kcore test coverage

checkpatch:
	.deps/checkpatch/checkpatch.pl --no-tree --strict --terse -f $$(git ls-files "kmod/*.[ch]" include/uapi/linux/kprog.h)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	for d in $(USER_DIRS) tests/kcore; do $(MAKE) -C $$d clean; done
