# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the Makefiles of bench/'s families share (each includes this file
# from its folder, bench/<family>/Makefile).
MPICC ?= mpicc
CC ?= gcc
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -pthread
LDLIBS += -lm
TOP := ../..
# kprog_detect.c: whether kprog carries a run (overlap, progress, latency)
COMMON := ../common
DETECT := $(COMMON)/kprog_detect.c $(COMMON)/kprog_detect.h
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)
EXPECT := $(TOP)/tests/expect.h
