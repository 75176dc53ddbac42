// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI's predefined datatypes and reduction ops as the module's element
 * types and ops (kprog.h, KPROG_STEP_REDUCE). Only pairs MPI defines are
 * taken (arithmetic on integer and floating types, logical ops on integer
 * and boolean types, bitwise ops on integers and MPI_BYTE, MINLOC/MAXLOC
 * on the pair types); anything else (user-defined ops, derived or other
 * predefined types such as long double or complex) makes the collective
 * pass through to Open MPI, which then also reports what is erroneous.
 */
#include "shim.h"
#include "coll.h"
#include "dtype.h"

enum cls { C_NONE, C_INT, C_BYTE, C_FLOAT, C_BOOL, C_PAIR };

/* An integer type of the given size, signed or not. */
KP_COLL_TEXT static int int_dt(int size, bool sign)
{
	switch (size) {
	case 1: return sign ? KPROG_DT_INT8 : KPROG_DT_UINT8;
	case 2: return sign ? KPROG_DT_INT16 : KPROG_DT_UINT16;
	case 4: return sign ? KPROG_DT_INT32 : KPROG_DT_UINT32;
	case 8: return sign ? KPROG_DT_INT64 : KPROG_DT_UINT64;
	}
	return 0;
}

KP_COLL_TEXT static bool is_one_of(MPI_Datatype t, const MPI_Datatype *list, int n)
{
	for (int i = 0; i < n; i++)
		if (t == list[i])
			return true;
	return false;
}

/* The module's type of @t and its class, or 0. */
KP_COLL_TEXT static int dtype_of(MPI_Datatype t, enum cls *cls)
{
	static const MPI_Datatype sints[] = {
		MPI_CHAR, MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT,
		MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_AINT, MPI_OFFSET,
		MPI_COUNT, MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8,
	};
	static const MPI_Datatype uints[] = {
		MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
		MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T,
	};
	static const MPI_Datatype floats[] = { MPI_FLOAT, MPI_DOUBLE, MPI_REAL,
					       MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8 };
	int size = 0;

	*cls = C_NONE;
	if (t == MPI_DATATYPE_NULL)
		return 0;
	if (t == MPI_FLOAT_INT || t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_2INT ||
	    t == MPI_SHORT_INT || t == MPI_2INTEGER) {
		*cls = C_PAIR;
		if (t == MPI_FLOAT_INT)
			return KPROG_DT_FLOAT_INT;
		if (t == MPI_DOUBLE_INT)
			return KPROG_DT_DOUBLE_INT;
		if (t == MPI_LONG_INT)
			return KPROG_DT_LONG_INT;
		if (t == MPI_SHORT_INT)
			return KPROG_DT_SHORT_INT;
		return KPROG_DT_2INT;
	}
	if (t == MPI_BYTE) {
		*cls = C_BYTE;
		return KPROG_DT_UINT8;
	}
	if (t == MPI_C_BOOL || t == MPI_CXX_BOOL) {
		PMPI_Type_size(t, &size);
		*cls = C_BOOL;
		return size == 1 ? KPROG_DT_BOOL : 0;
	}
	if (is_one_of(t, sints, sizeof(sints) / sizeof(sints[0]))) {
		PMPI_Type_size(t, &size);
		*cls = C_INT;
		return int_dt(size, true);
	}
	if (is_one_of(t, uints, sizeof(uints) / sizeof(uints[0]))) {
		PMPI_Type_size(t, &size);
		*cls = C_INT;
		return int_dt(size, false);
	}
	if (is_one_of(t, floats, sizeof(floats) / sizeof(floats[0]))) {
		PMPI_Type_size(t, &size);
		*cls = C_FLOAT;
		return size == 4 ? KPROG_DT_FLOAT : size == 8 ? KPROG_DT_DOUBLE : 0;
	}
	return 0;
}

/* Bytes of one element of the module's type (kprog.h). */
KP_COLL_TEXT static size_t dt_bytes(int dt)
{
	switch (dt) {
	case KPROG_DT_INT8: case KPROG_DT_UINT8: case KPROG_DT_BOOL: return 1;
	case KPROG_DT_INT16: case KPROG_DT_UINT16: return 2;
	case KPROG_DT_INT32: case KPROG_DT_UINT32: case KPROG_DT_FLOAT: return 4;
	case KPROG_DT_INT64: case KPROG_DT_UINT64: case KPROG_DT_DOUBLE: return 8;
	case KPROG_DT_FLOAT_INT: case KPROG_DT_2INT: case KPROG_DT_SHORT_INT: return 8;
	case KPROG_DT_DOUBLE_INT: case KPROG_DT_LONG_INT: return 16;
	}
	return 0;
}

/*
 * The last pair taken: a program reduces the same type with the same op
 * call after call. Only predefined types and ops are ever taken, and
 * their handles stay the same for the whole run, so the pair never goes
 * stale; it saves the two Open MPI calls of a taken pair.
 */
static struct {
	MPI_Datatype type;
	MPI_Op op;
	struct kp_redop ro;
} last_taken;

KP_COLL_TEXT bool kp_coll_redop(MPI_Datatype type, MPI_Op op, struct kp_redop *ro)
{
	enum cls cls;
	int dt, kop = 0;
	MPI_Aint lb, extent;
	bool ok;

	if (type == last_taken.type && op == last_taken.op && last_taken.ro.esize) {
		*ro = last_taken.ro;
		return true;
	}
	dt = dtype_of(type, &cls);
	if (!dt)
		return false;
	if (op == MPI_SUM) kop = KPROG_OP_SUM;
	else if (op == MPI_PROD) kop = KPROG_OP_PROD;
	else if (op == MPI_MIN) kop = KPROG_OP_MIN;
	else if (op == MPI_MAX) kop = KPROG_OP_MAX;
	else if (op == MPI_LAND) kop = KPROG_OP_LAND;
	else if (op == MPI_LOR) kop = KPROG_OP_LOR;
	else if (op == MPI_LXOR) kop = KPROG_OP_LXOR;
	else if (op == MPI_BAND) kop = KPROG_OP_BAND;
	else if (op == MPI_BOR) kop = KPROG_OP_BOR;
	else if (op == MPI_BXOR) kop = KPROG_OP_BXOR;
	else if (op == MPI_MINLOC) kop = KPROG_OP_MINLOC;
	else if (op == MPI_MAXLOC) kop = KPROG_OP_MAXLOC;
	else
		return false;	/* user-defined, MPI_REPLACE, MPI_NO_OP */
	switch (cls) {
	case C_INT: ok = kop <= KPROG_OP_BXOR; break;
	case C_BYTE: ok = kop >= KPROG_OP_BAND && kop <= KPROG_OP_BXOR; break;
	case C_FLOAT: ok = kop <= KPROG_OP_MAX; break;
	case C_BOOL: ok = kop >= KPROG_OP_LAND && kop <= KPROG_OP_LXOR; break;
	case C_PAIR: ok = kop == KPROG_OP_MINLOC || kop == KPROG_OP_MAXLOC; break;
	default: ok = false;
	}
	if (!ok)
		return false;
	/* elements one after another with the C layout the module assumes */
	PMPI_Type_get_extent(type, &lb, &extent);
	if (lb != 0 || (size_t)extent != dt_bytes(dt))
		return false;
	ro->dtype = dt;
	ro->op = kop;
	ro->esize = (size_t)extent;
	last_taken.type = type;
	last_taken.op = op;
	last_taken.ro = *ro;
	kp_type_quick(type);	/* predefined: the size checks of the next calls find it (coll_mpi.c) */
	return true;
}
