// SPDX-License-Identifier: GPL-2.0
/*
 * kprog: instantiates the tracepoints declared in kprog_trace.h; the other
 * files only include the header.
 */
#define CREATE_TRACE_POINTS
#include "kprog_trace.h"
