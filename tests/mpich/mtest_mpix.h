/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* tests/mpich: no MPIX extensions (Open MPI) */
