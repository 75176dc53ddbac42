/* SPDX-License-Identifier: GPL-2.0 */
/* tests/mpich: no MPIX extensions (Open MPI) */
