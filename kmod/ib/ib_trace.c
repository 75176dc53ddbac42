// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib: instantiates the tracepoints declared in ib_trace.h; the other
 * files only include the header.
 */
#define CREATE_TRACE_POINTS
#include "ib_trace.h"
