# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The netlink tools' helpers (kprog_nl.c, kprog_stats.c, cpulist.c in
# bench/stat/) and flags, for kprog-stat and irqcost: plain $(CC),
# libnl-genl-3 from pkg-config. Included after ../common.mk.
STAT := ../stat
NL_CFLAGS := $(shell pkg-config --cflags libnl-genl-3.0)
NL_LIBS := $(shell pkg-config --libs libnl-genl-3.0)
TOOL_CFLAGS = $(CPPFLAGS) $(CFLAGS) -DKPROG_VERSION='"$(VERSION)"' -D_GNU_SOURCE \
	      -I$(TOP)/include/uapi -I$(TOP)/tests -I$(STAT) $(NL_CFLAGS)
UAPI := $(TOP)/include/uapi/linux/kprog.h $(TOP)/include/uapi/linux/kprog_bench.h
NL_SRCS := $(addprefix $(STAT)/,kprog_nl.c kprog_stats.c cpulist.c)
NL_HDRS := $(addprefix $(STAT)/,kprog_nl.h kprog_stats.h cpulist.h) $(UAPI)
