// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fortran interface of the monitoring sessions (seed 002, section 4.3):
 * the C functions under gfortran's names (lower case, one trailing
 * underscore), the session id an INTEGER, one more argument for the
 * return value; the counts are INTEGER(KIND=8) arrays. The constants and
 * the two IGNORE arrays come with the module MPI_Monitoring
 * (include/mpi_monitoring.f90): the IGNORE arrays are the variables
 * below, recognised by their address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "MPI_Monitoring.h"

/* Everything below is Fortran's interface: exported (the shim hides the rest). */
#pragma GCC visibility push(default)

int64_t kp_mpi_m_data_ignore[1];
int kp_mpi_m_int_ignore[1];

static unsigned long *data(int64_t *a)
{
	_Static_assert(sizeof(unsigned long) == sizeof(int64_t), "LP64 only");
	return a == kp_mpi_m_data_ignore ? MPI_M_DATA_IGNORE : (unsigned long *)a;
}

static int *intp(int *a)
{
	return a == kp_mpi_m_int_ignore ? MPI_M_INT_IGNORE : a;
}

/* A Fortran string (blank padded, not terminated) as a C string. */
static char *cstr(const char *s, size_t len)
{
	char *c;

	while (len && s[len - 1] == ' ')
		len--;
	c = malloc(len + 1);
	if (c) {
		memcpy(c, s, len);
		c[len] = 0;
	}
	return c;
}

void mpi_m_init_(int *ierr)
{
	*ierr = MPI_M_init();
}

void mpi_m_finalize_(int *ierr)
{
	*ierr = MPI_M_finalize();
}

void mpi_m_start_(MPI_Fint *comm, int *msid, int *ierr)
{
	*ierr = MPI_M_start(MPI_Comm_f2c(*comm), msid);
}

void mpi_m_suspend_(int *msid, int *ierr)
{
	*ierr = MPI_M_suspend(*msid);
}

void mpi_m_continue_(int *msid, int *ierr)
{
	*ierr = MPI_M_continue(*msid);
}

void mpi_m_reset_(int *msid, int *ierr)
{
	*ierr = MPI_M_reset(*msid);
}

void mpi_m_free_(int *msid, int *ierr)
{
	*ierr = MPI_M_free(*msid);
}

void mpi_m_get_info_(int *msid, int *provided, int *array_size, int *ierr)
{
	*ierr = MPI_M_get_info(*msid, intp(provided), intp(array_size));
}

void mpi_m_get_data_(int *msid, int64_t *counts, int64_t *sizes, int *flags, int *ierr)
{
	*ierr = MPI_M_get_data(*msid, data(counts), data(sizes), *flags);
}

void mpi_m_allgather_data_(int *msid, int64_t *counts, int64_t *sizes, int *flags, int *ierr)
{
	*ierr = MPI_M_allgather_data(*msid, data(counts), data(sizes), *flags);
}

void mpi_m_rootgather_data_(int *msid, int *root, int64_t *counts, int64_t *sizes, int *flags,
			    int *ierr)
{
	*ierr = MPI_M_rootgather_data(*msid, *root, data(counts), data(sizes), *flags);
}

void mpi_m_flush_(int *msid, char *filename, int *flags, int *ierr, size_t len)
{
	char *f = cstr(filename, len);

	*ierr = f ? MPI_M_flush(*msid, f, *flags) : MPI_M_INTERNAL_FAIL;
	free(f);
}

void mpi_m_rootflush_(int *msid, int *root, char *filename, int *flags, int *ierr, size_t len)
{
	char *f = cstr(filename, len);

	*ierr = f ? MPI_M_rootflush(*msid, *root, f, *flags) : MPI_M_INTERNAL_FAIL;
	free(f);
}

#pragma GCC visibility pop
