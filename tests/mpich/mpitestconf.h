/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* tests/mpich: what MPICH's configure would find on Debian 12 with Open MPI 4.1.4 */
#ifndef KPROG_MPITESTCONF_H
#define KPROG_MPITESTCONF_H
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_PTHREAD_H 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define HAVE_MPI_WIN_CREATE 1
#endif
