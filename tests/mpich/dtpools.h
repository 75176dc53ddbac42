/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tests/mpich/dtpools.h: written for kprog, not MPICH's datatype pools.
 * It declares only what MPICH's include/mtest_dtp.h names, so that the
 * coll tests that use mtest_dtp.h for its argument loops alone (allred,
 * allred2, op_coll, reduce: memory types, counts) build. No pool is
 * implemented: a test that calls DTP_* itself does not link, and
 * tests/mpich/run-suite leaves those out (see its header).
 */
#ifndef KPROG_DTPOOLS_STUB_H
#define KPROG_DTPOOLS_STUB_H
#include <mpi.h>

#define DTP_SUCCESS 0

typedef struct {
	void *priv;
} DTP_pool_s;

typedef struct {
	MPI_Datatype DTP_datatype;
	MPI_Aint DTP_type_count;
	MPI_Aint DTP_bufsize;
	MPI_Aint DTP_buf_offset;
	void *priv;
} DTP_obj_s;

int DTP_pool_create(const char *basic_type_str, MPI_Aint basic_type_count, int seed, DTP_pool_s *dtp);
int DTP_pool_free(DTP_pool_s dtp);
int DTP_obj_create(DTP_pool_s dtp, DTP_obj_s *obj, MPI_Aint maxbufsize);
int DTP_obj_create_custom(DTP_pool_s dtp, DTP_obj_s *obj, const char *desc);
int DTP_obj_free(DTP_obj_s obj);
int DTP_obj_buf_init(DTP_obj_s obj, void *buf, int val_start, int val_stride, MPI_Aint val_count);
int DTP_obj_buf_check(DTP_obj_s obj, void *buf, int val_start, int val_stride, MPI_Aint val_count);
char *DTP_obj_get_description(DTP_obj_s obj);
#endif
