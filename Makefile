# kprog top-level build. `make` builds everything; `make check` runs all
# tests (native, then one VM boot) and ends with `N passed, N failed`;
# `make demo` runs the quick overlap preset with and without kprog in
# the VM; `make microbench` and `make latency` the other benchmarks there;
# `make check-twonode` the soft-RoCE bench in one VM and across two;
# `make check-debug` the suites under a debug kernel (KASAN, lockdep, ...).
# They call scripts/setup first, so they work on a fresh machine.
# `make install` (PREFIX, LIBDIR, DESTDIR) installs the shim (libkprog.so.0),
# headers, Fortran module, pkg-config file, tools, man pages and udev rule;
# `make install-dkms` the modules' sources for dkms (dkms.conf); `make deb`
# the Debian packages (debian/, into build/deb/).

ifeq ($(KVER),)
KVER = $(shell ls -1 /lib/modules 2>/dev/null | while read v; do \
	  [ -e /lib/modules/$$v/build/Makefile ] && echo $$v; done | sort -V | tail -n1)
endif
# A kernel that scripts/setup unpacked under .deps/kernels/ instead of
# installing it (Debian's 6.12 and PREEMPT_RT 6.1): KVER=<ver> takes its
# headers from there, and `make module` builds a copy of the module in
# build/kernels/<ver>/ (scripts/check-kernels), so that kmod/ keeps the
# installed kernel's build; scripts/vm-run boots that kernel with it.
# Or the debug kernel (scripts/build-debug-kernel, `make check-debug`) in its
# cache outside the repository, laid out the same way.
KERNEL_CACHE ?= $(or $(KPROG_KERNEL_CACHE),/var/cache/kprog)
XKDIR = $(if $(wildcard $(CURDIR)/.deps/kernels/$(KVER)/usr/src/linux-headers-$(KVER)/Makefile),$\
	$(CURDIR)/.deps/kernels/$(KVER)/usr/src/linux-headers-$(KVER),$\
	$(KERNEL_CACHE)/kernels/$(KVER)/usr/src/linux-headers-$(KVER))
KDIR ?= $(if $(wildcard /lib/modules/$(KVER)/build/Makefile),/lib/modules/$(KVER)/build,$\
	$(if $(wildcard $(XKDIR)/Makefile),$(XKDIR),/lib/modules/$(KVER)/build))
# Not exported: `make check` on a fresh machine computes these before
# scripts/setup has installed the headers; sub-makes compute them afresh.

USER_DIRS := libshim tools bench tests/selftests tests/mpi tests/twonode tests/fuzz

# Installation (`make install`, `make install-dkms`; DESTDIR for staging).
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
# The Fortran module is compiler-specific: beside the library, not in include/
FMODDIR ?= $(LIBDIR)/kprog/fortran
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/kprog
UDEVRULESDIR ?= /etc/udev/rules.d
DKMSDIR ?= /usr/src/kprog-$(VERSION)
# What the modules' build needs, as dkms builds kprog.ko and kprog_ib.ko from
# $(DKMSDIR) (dkms.conf); not the benchmark module kprog_bench.ko
# (kmod/bench/), which production nodes lack.
DKMS_FILES := dkms.conf Kbuild kmod/Kbuild kmod/core/Kbuild kmod/ib/Kbuild \
	      $(filter-out %.mod.c,$(wildcard kmod/core/*.[ch] kmod/ib/*.[ch])) \
	      include/uapi/linux/kprog.h

.PHONY: all module user $(USER_DIRS) install install-dkms uninstall deb print-kdir setup check check-dkms check-huge check-fuzz check-faults check-debug check-twonode check-mpich overlap-twonode check-osu-coll check-imb-coll demo microbench latency apps checkpatch kcore clean

all: module user

setup:
	scripts/setup

module:
	@[ -f $(KDIR)/Makefile ] || { echo "no kernel headers in $(KDIR): run scripts/setup" >&2; exit 1; }
ifeq ($(KDIR),$(XKDIR))
	scripts/check-kernels $(KVER)
else
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules
endif

user: $(USER_DIRS)

$(USER_DIRS):
	$(MAKE) -C $@

# reorder and the monitoring/profiler tests link with libkprog.so; tests/mpi
# links tools/kprog-info
bench tests/mpi: libshim
tests/mpi: tools

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

# The device fuzzer in the VM (tests/fuzz/run): CALLS calls (default
# 1,000,000) by PROCS processes (default 4), FUZZ_SEED to repeat a run;
# then pins, holders of /dev/kprog, rmmod and the kernel log are checked.
CALLS ?= 1000000
PROCS ?= 4
check-fuzz: setup
	$(MAKE) all
	scripts/vm-run --smp 1 --timeout 7200 -- tests/fuzz/run --calls $(CALLS) --procs $(PROCS) \
		--seconds 6000 $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

# The fault campaign in the VM (tests/mpi/run-faults): MPI jobs under the
# shim, two at once, 12 ranks each of which 10 are killed (SIGKILL) amid the
# traffic, until KILLS ranks died (default 1000; ROUNDS= is taken for KILLS,
# as run-faults' first argument now counts killed ranks). About 2-3 s a
# killed rank under emulation, most of it Open MPI's start of the ranks
# (1000 kills: 30-50 min on the 2-vCPU VM, with the host's load).
# FAULT_SEED to repeat a run; KPROG_FAULT_RANKS/_VICTIMS/_JOBS/_ITERS pass
# through. The root is mounted cache=loose (KPROG_VM_9P_OPTS): Open MPI's
# start costs less, and nothing on the host changes under the campaign.
KILLS ?= $(if $(ROUNDS),$(ROUNDS),1000)
check-faults: setup
	$(MAKE) all
	KPROG_VM_9P_OPTS=$${KPROG_VM_9P_OPTS:-cache=loose} \
	scripts/vm-run --timeout $$(( $(KILLS) * 6 + 900 )) -- tests/mpi/run-faults $(KILLS) $(FAULT_SEED)

# The suites under a debug kernel (KASAN, KFENCE, KMEMLEAK, lockdep,
# DEBUG_ATOMIC_SLEEP, UBSAN, DEBUG_OBJECTS; scripts/check-debug): builds it
# from Debian's linux-source once per machine into /var/cache/kprog
# (scripts/build-debug-kernel, scripts/debug-kernel.config; the first build
# took 21 min on the shared 2-core host), the module for it, then in one VM boot the
# selftests, tests/mpi, the fuzzer (CALLS) and the fault campaign (KILLS
# killed ranks, as check-faults), with the kernel log and a kmemleak scan
# checked after each and after rmmod; fails on any report. Quicker:
# make check-debug CALLS=20000 KILLS=20.
# Not part of `make check` (nor is the kernel built by scripts/setup).
check-debug: setup
	CALLS=$(CALLS) PROCS=$(PROCS) ROUNDS=$(KILLS) FUZZ_SEED=$(FUZZ_SEED) FAULT_SEED=$(FAULT_SEED) \
		scripts/check-debug

# The soft-RoCE test bench (not part of `make check`): one VM with rxe over a
# veth pair (scripts/vm-run --rxe), then two VMs joined by a link
# (scripts/vm-run --nodes 2): perftest, Open MPI over UCX/rxe across the
# nodes, plain and under the shim; tests/mpi with the ibverbs transport forced
# in one VM and across the two; a peer killed mid-transfer (scripts/check-twonode);
# ends with `N passed, N failed`.
check-twonode: setup
	$(MAKE) all
	scripts/check-twonode

# MPICH's point-to-point and collective suites as a third-party check of the
# shim, in the VM (tests/mpich/run-suite; not part of `make check`: about an
# hour under emulation). MPICH's sources are not fetched here: put its
# test/mpi in build/mpich/test/mpi first (see tests/mpich/run-suite --help).
# MPICH_SUITES=coll (or pt2pt) for one; MPICH_ARGS= more options for run-suite
# (e.g. "--plain-on-fail --np-cap 5"); MPICH_TWONODE=1: across the two VMs
# (scripts/vm-run --nodes 2, run-suite --twonode --np-cap 4: ranks round robin
# over the nodes).
MPICH_SUITES ?= pt2pt coll
MPICH_VM = $(if $(MPICH_TWONODE),scripts/vm-run --nodes 2,scripts/vm-run)
MPICH_2N = $(if $(MPICH_TWONODE),--twonode --np-cap 4)
check-mpich: setup
	@[ -f build/mpich/test/mpi/coll/testlist.in ] && [ -f build/mpich/test/mpi/pt2pt/testlist.in ] || { \
	  echo "check-mpich: MPICH's test/mpi is not in build/mpich/test/mpi. Get it with e.g."; \
	  echo "  git clone --depth 1 https://github.com/pmodels/mpich /tmp/mpich"; \
	  echo "  mkdir -p build/mpich && git -C /tmp/mpich archive HEAD test/mpi/pt2pt test/mpi/coll test/mpi/include | tar x -C build/mpich"; \
	  exit 2; }
	$(MAKE) all
	rc=0; for s in $(MPICH_SUITES); do \
	  tests/mpich/run-suite $$s --build-only $(MPICH_ARGS) || rc=1; \
	  $(MPICH_VM) --timeout 10800 -- tests/mpich/run-suite $$s $(MPICH_2N) $(MPICH_ARGS) || rc=1; \
	  [ $$s = coll ] && { tests/mpich/run-suite coll --as-nonblocking --build-only $(MPICH_ARGS) || rc=1; \
	    $(MPICH_VM) --timeout 10800 -- tests/mpich/run-suite coll --as-nonblocking --column KPROG_COLL_MIN=0 $(MPICH_2N) $(MPICH_ARGS) || rc=1; }; \
	done; exit $$rc

# The overlap and latency benchmarks across the two VMs: plain Open MPI over
# UCX/rxe and kprog with its ibverbs transport side by side (scripts/twonode-bench)
overlap-twonode: setup
	$(MAKE) all
	scripts/twonode-bench

# dkms install of kprog.ko and kprog_ib.ko, modprobe kprog_ib and kprog-info
# in the VM with soft-RoCE, in overlays that keep the host's /lib/modules
# untouched (the modules' build under emulation is most of its time; not
# part of `make check`)
check-dkms: setup
	$(MAKE) -C tools kprog-info
	scripts/vm-run --no-module --rxe --timeout 7200 -- scripts/check-dkms

# the seed-001 microbenchmarks (interrupt cost, progress threads) in the VM
microbench: setup
	$(MAKE) all
	scripts/microbench

# seed 004: ping-pong latency, latency vs number of processes, message rate,
# plain Open MPI and kprog side by side in the VM (quick preset)
latency: setup
	$(MAKE) all
	scripts/latency

# issue 31: production MPI codes from Debian's archive (LAMMPS LJ melt and EAM
# copper, Quantum ESPRESSO pw.x on silicon), plain Open MPI and kprog
# alternating in the VM, with their own
# correctness checks (docs/apps.md; tens of minutes: not part of `make check`)
apps: setup
	$(MAKE) all
	scripts/apps

# Every collective benchmark of the OSU Micro-Benchmarks 7.4 (blocking,
# nonblocking, neighbourhood) with OSU's validation (-c), 1 B..4 MiB, np 2,
# 3 and 4, plain Open MPI then under the shim (defaults, KPROG_COLL_MIN=0)
# in the VM (bench/coll/check-osu-coll; about 1-2 hours under emulation,
# not part of `make check`). OSU is third-party code, built outside this
# tree: OSU=<its directory> (default $KPROG_OSU_DIR); docs/testing.md has
# how. OSU_TWONODE=1: across the two VMs (np 2 and 4) instead. OSU_ARGS=
# more options, e.g. "--inplace --types 'mpi_int mpi_float' --plain-on-fail".
OSU ?= $(KPROG_OSU_DIR)
check-osu-coll: setup
	@if [ -z "$(OSU)" ] || [ ! -x "$(OSU)/c/mpi/collective/non_blocking/osu_iallreduce" ]; then \
		echo "check-osu-coll: OSU 7.4 not found (OSU=$(OSU)); build it outside this tree:"; \
		echo "  git clone https://github.com/sherrywong1220/osu-micro-benchmarks-7.4 /path/osu"; \
		echo "  (or the release tarball osu-micro-benchmarks-7.4.tar.gz from mvapich.cse.ohio-state.edu)"; \
		echo "  cd /path/osu && ./configure CC=mpicc CXX=mpicxx && make -C c/mpi/collective"; \
		echo "then: make check-osu-coll OSU=/path/osu"; \
		exit 2; \
	fi
	$(MAKE) all
	$(if $(OSU_TWONODE),scripts/vm-run --nodes 2 --timeout 14400 -- bench/coll/check-osu-coll $(OSU) --twonode $(OSU_ARGS),$\
		scripts/vm-run --timeout 14400 -- bench/coll/check-osu-coll $(OSU) $(OSU_ARGS))

# The Intel MPI Benchmarks' collectives (every IMB-NBC benchmark and IMB-MPI1's
# blocking ones) with IMB's own buffer check, np 2, 3 and 4, plain Open MPI then
# under the shim (bench/coll/check-imb-coll; about an hour under emulation, not
# part of `make check`). IMB is third-party code, built outside this tree with
# -DCHECK: IMB=<that build's directory>; docs/benchmarks-coll.md (fourteenth
# session) has how. IMB_ARGS= more options, e.g. "--np 2 --only nbc".
IMB ?= $(KPROG_IMB_DIR)
check-imb-coll: setup
	@if [ -z "$(IMB)" ] || [ -z "$$(find "$(IMB)" -name IMB-NBC -type f 2>/dev/null | head -1)" ]; then \
		echo "check-imb-coll: IMB-NBC not found (IMB=$(IMB)); build Intel MPI Benchmarks with -DCHECK"; \
		echo "  outside this tree (docs/benchmarks-coll.md, fourteenth session), then: make check-imb-coll IMB=/path"; \
		exit 2; \
	fi
	$(MAKE) all
	scripts/vm-run --timeout 14400 -- bench/coll/check-imb-coll $(IMB) $(IMB_ARGS)

# Unit tests of kmod/core/*.c (and ib/ib_plan.c) compiled in user space against the kernel headers,
# with mocks, ASan/UBSan and gcov (tests/kcore/README); no VM, seconds.
kcore:
	$(MAKE) -C tests/kcore test coverage

checkpatch:
	.deps/checkpatch/checkpatch.pl --no-tree --strict --terse -f $$(git ls-files "kmod/*.[ch]" "include/uapi/linux/kprog*.h")

# The shim as libkprog.so.$(VERSION) with its SONAME link libkprog.so.0 and
# the link libkprog.so for -lkprog; the ABI and MPI_M_* headers, the Fortran
# module (when there is a Fortran compiler), the pkg-config file, the tools
# (kprog-info, kprog-stat, kprog-monmap), the man pages, the udev rule and
# the modprobe.d/modules-load.d examples. The modules themselves are
# installed by dkms (install-dkms) or `make module` + your own copy.
SOMAJOR := 0
MAN_PAGES := $(wildcard man/*.[1-8])
MPI_M_LINKS := $(shell cat man/MPI_Monitoring.links)
TOOLS := tools/kprog-info bench/stat/kprog-stat bench/monitoring/kprog-monmap
install:
	$(MAKE) -C libshim libkprog.so mpi_monitoring.mod
	$(MAKE) -C bench kprog-stat
	$(MAKE) -C tools kprog-info
	install -D -m 0755 libshim/libkprog.so $(DESTDIR)$(LIBDIR)/libkprog.so.$(VERSION)
	ln -sf libkprog.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libkprog.so.$(SOMAJOR)
	ln -sf libkprog.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libkprog.so
	install -D -m 0644 include/uapi/linux/kprog.h $(DESTDIR)$(INCLUDEDIR)/linux/kprog.h
	install -D -m 0644 include/MPI_Monitoring.h $(DESTDIR)$(INCLUDEDIR)/MPI_Monitoring.h
	if [ -f libshim/mpi_monitoring.mod ]; then \
		install -D -m 0644 libshim/mpi_monitoring.mod $(DESTDIR)$(FMODDIR)/mpi_monitoring.mod; \
	else echo "install: no libshim/mpi_monitoring.mod (no Fortran compiler): Fortran module not installed"; fi
	mkdir -p $(DESTDIR)$(LIBDIR)/pkgconfig
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@FMODDIR@|$(FMODDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@SOMAJOR@|$(SOMAJOR)|' \
	    packaging/kprog.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/kprog.pc
	install -D -m 0755 tools/kprog-info $(DESTDIR)$(BINDIR)/kprog-info
	install -D -m 0755 bench/stat/kprog-stat $(DESTDIR)$(BINDIR)/kprog-stat
	sed 's|^KPROG_VERSION=@VERSION@|KPROG_VERSION=$(VERSION)|' bench/monitoring/kprog-monmap > $(DESTDIR)$(BINDIR)/kprog-monmap
	chmod 0755 $(DESTDIR)$(BINDIR)/kprog-monmap
	for m in $(MAN_PAGES); do \
		s=$${m##*.}; install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/$${m#man/} || exit 1; \
	done
	for f in $(MPI_M_LINKS); do \
		echo '.so man3/MPI_Monitoring.3' > $(DESTDIR)$(MANDIR)/man3/$$f.3 || exit 1; \
	done
	install -D -m 0644 packaging/udev/90-kprog.rules $(DESTDIR)$(UDEVRULESDIR)/90-kprog.rules
	install -D -m 0644 packaging/modprobe.d/kprog.conf $(DESTDIR)$(DOCDIR)/examples/modprobe.d/kprog.conf
	install -D -m 0644 packaging/modules-load.d/kprog.conf $(DESTDIR)$(DOCDIR)/examples/modules-load.d/kprog.conf

# The modules' sources where dkms expects them; then, as root:
#   dkms install kprog/$(VERSION)     (builds kprog.ko and kprog_ib.ko for the
#   running kernel; with AUTOINSTALL, every later kernel too)
install-dkms:
	@for f in $(DKMS_FILES); do install -D -m 0644 $$f $(DESTDIR)$(DKMSDIR)/$$f || exit 1; done
	@echo "sources in $(DESTDIR)$(DKMSDIR); now: dkms install kprog/$(VERSION)"

# The Debian packages (debian/): kprog-dkms, libkprog0, libkprog-dev,
# kprog-tools, built by dpkg-buildpackage from a copy of the tree in
# build/deb/src (it writes its results into the parent directory), then
# checked with lintian (debian/kprog.lintian-overrides... explained in
# docs/packaging.md). The .deb files land in build/deb/.
deb:
	rm -rf build/deb
	mkdir -p build/deb/src
	git ls-files --cached --others --exclude-standard -z | grep -zv '^build/' | \
		xargs -0 tar -cf - --ignore-failed-read 2>/dev/null | tar -xf - -C build/deb/src
	cd build/deb/src && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning --suppress-tags-from-file debian/lintian-suppressed build/deb/*.changes

print-kdir:
	@echo $(KDIR)

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libkprog.so $(DESTDIR)$(LIBDIR)/libkprog.so.$(SOMAJOR) \
	      $(DESTDIR)$(LIBDIR)/libkprog.so.$(VERSION) $(DESTDIR)$(INCLUDEDIR)/linux/kprog.h \
	      $(DESTDIR)$(INCLUDEDIR)/MPI_Monitoring.h $(DESTDIR)$(FMODDIR)/mpi_monitoring.mod \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/kprog.pc $(DESTDIR)$(UDEVRULESDIR)/90-kprog.rules \
	      $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
	      $(foreach m,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	      $(foreach f,$(MPI_M_LINKS),$(DESTDIR)$(MANDIR)/man3/$(f).3)
	-rmdir $(DESTDIR)$(FMODDIR) $(DESTDIR)$(LIBDIR)/kprog 2>/dev/null
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DKMSDIR)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	for d in $(USER_DIRS) tests/kcore; do $(MAKE) -C $$d clean; done
