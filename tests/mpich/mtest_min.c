// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tests/mpich/mtest_min.c: a minimal stand-in for MPICH's test utility
 * library (test/mpi/util/mtest*.c), written for kprog, so that the tests of
 * MPICH's test/mpi/pt2pt and test/mpi/coll that do not use its datatype
 * pools build against Open MPI. Same contracts as the functions it
 * replaces: MTest_Init / MTest_Finalize (" No Errors" or " Found N errors"
 * from rank 0), MTestGetIntracommGeneral / MTestGetIntercomm (a sequence of
 * communicators, 0 when there are no more), argument lists (-key=value, from
 * argv or from one string), integer and string lists, host memory only (every
 * memory type is host memory). tests/mpich/mtest_run.c has the main() of
 * the tests written as run(arg).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpitest.h"

static int intra_idx, inter_idx;
static const char *intra_name = "MPI_COMM_NULL";
static MPI_Comm self_dups[4];	/* MTestCommRandomize() */
static int nself_dups;

void MTest_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int flag = 0;

	MPI_Initialized(&flag);
	if (!flag)
		MPI_Init_thread(argc, argv, required, provided);
	else
		MPI_Query_thread(provided);
}

void MTest_Init(int *argc, char ***argv)
{
	int provided;

	MTest_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

void MTest_Finalize(int errs)
{
	int rank, all = 0;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (all)
			printf(" Found %d errors\n", all);
		else
			printf(" No Errors\n");
		fflush(stdout);
	}
	while (nself_dups > 0)
		MPI_Comm_free(&self_dups[--nself_dups]);
	MPI_Finalize();
}

int MTestReturnValue(int errors)
{
	return errors ? 1 : 0;
}

int MTestGetStressLevel(void)
{
	return 1;
}

void MTestSleep(int sec)
{
	sleep(sec);
}

void MTestGetDbgInfo(int *dbgflag, int *verbose)
{
	*dbgflag = 0;
	*verbose = getenv("MPITEST_VERBOSE") ? atoi(getenv("MPITEST_VERBOSE")) : 0;
}

void MTestPrintError(int errcode)
{
	int cls, len;
	char s[MPI_MAX_ERROR_STRING];

	MPI_Error_class(errcode, &cls);
	MPI_Error_string(errcode, s, &len);
	printf("Error class %d (%s)\n", cls, s);
	fflush(stdout);
}

void MTestPrintErrorMsg(const char msg[], int errcode)
{
	printf("%s: ", msg);
	MTestPrintError(errcode);
}

void MTestPrintfMsg(int level, const char format[], ...)
{
	int verbose, dbg;
	va_list ap;

	MTestGetDbgInfo(&dbg, &verbose);
	if (verbose < level)
		return;
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
	fflush(stdout);
}

void MTestError(const char msg[])
{
	fprintf(stderr, "%s\n", msg);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int MTestIsBasicDtype(MPI_Datatype type)
{
	int n, a, d, comb;

	MPI_Type_get_envelope(type, &n, &a, &d, &comb);
	return comb == MPI_COMBINER_NAMED;
}

/*
 * Intra-communicators, in turn: world, a dup of world, world reversed
 * (split with key -rank), then with allowSmaller the even/odd halves and
 * world without its last rank (that rank gets MPI_COMM_NULL), then none.
 * A communicator smaller than min_size is MPI_COMM_NULL with allowSmaller
 * and skipped without.
 */
int MTestGetIntracommGeneral(MPI_Comm *comm, int min_size, int allowSmaller)
{
	int rank, size;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (;;) {
		*comm = MPI_COMM_NULL;
		switch (intra_idx++) {
		case 0:
			*comm = MPI_COMM_WORLD;
			intra_name = "MPI_COMM_WORLD";
			break;
		case 1:
			MPI_Comm_dup(MPI_COMM_WORLD, comm);
			intra_name = "Dup of MPI_COMM_WORLD";
			break;
		case 2:
			MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, comm);
			intra_name = "Rank reverse of MPI_COMM_WORLD";
			break;
		case 3:
			if (!allowSmaller)
				continue;
			MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, comm);
			intra_name = "Even/odd split of MPI_COMM_WORLD";
			break;
		case 4:
			if (!allowSmaller || size < 2)
				continue;
			MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 0, rank,
				       comm);
			intra_name = "MPI_COMM_WORLD without its last rank";
			break;
		default:
			intra_idx = 0;
			intra_name = "MPI_COMM_NULL";
			return 0;
		}
		if (*comm != MPI_COMM_NULL) {
			int n;

			MPI_Comm_size(*comm, &n);
			if (n < min_size) {
				/* too small: kept (as MPI_COMM_NULL) only with allowSmaller */
				MTestFreeComm(comm);
				*comm = MPI_COMM_NULL;
				if (!allowSmaller)
					continue;
			}
		}
		return intra_idx;
	}
}

const char *MTestGetIntracommName(void)
{
	return intra_name;
}

int MTestGetIntracomm(MPI_Comm *comm, int min_size)
{
	return MTestGetIntracommGeneral(comm, min_size, 0);
}

/*
 * Inter-communicators: world split into halves (even/odd world ranks), then
 * none. *isLeftGroup: member of the even half.
 */
int MTestGetIntercomm(MPI_Comm *comm, int *isLeftGroup, int min_size)
{
	int rank, size;
	MPI_Comm local;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	*comm = MPI_COMM_NULL;
	*isLeftGroup = 0;
	if (inter_idx++ > 0 || size < 2 || size < min_size) {
		inter_idx = 0;
		return 0;
	}
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 12345, comm);
	MPI_Comm_free(&local);
	*isLeftGroup = rank % 2 == 0;
	return 1;
}

void MTestFreeComm(MPI_Comm *comm)
{
	if (*comm != MPI_COMM_WORLD && *comm != MPI_COMM_SELF && *comm != MPI_COMM_NULL)
		MPI_Comm_free(comm);
}

void MTestCommRandomize(void)
{
	int rank, i;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	srand(rank);
	nself_dups = rand() % 4;
	for (i = 0; i < nself_dups; i++)
		MPI_Comm_dup(MPI_COMM_SELF, &self_dups[i]);
}

/* ---- -key=value argument lists ---- */
struct arg {
	char *key, *val;
	struct arg *next;
};

MTestArgList *MTestArgListCreate(int argc, char *argv[])
{
	struct arg *head = NULL, *a;
	int i;

	for (i = 1; i < argc; i++) {
		char *s = argv[i], *eq;

		if (*s != '-')
			continue;
		while (*s == '-')
			s++;
		a = calloc(1, sizeof(*a));
		a->key = strdup(s);
		eq = strchr(a->key, '=');
		if (eq) {
			*eq = 0;
			a->val = eq + 1;
		} else {
			a->val = (char *)"1";	/* -arg is -arg=1 */
		}
		a->next = head;
		head = a;
	}
	/* a dummy head: never NULL */
	a = calloc(1, sizeof(*a));
	a->next = head;
	return a;
}

/* the same from one string: "-a=1 -b=2" (run(arg) tests, mtest_dtp.h) */
MTestArgList *MTestArgListCreate_arg(const char *arg)
{
	char *copy = strdup(arg ? arg : ""), *w, *save = NULL;
	char **v = calloc(strlen(copy) / 2 + 2, sizeof(*v));
	int n = 1;
	MTestArgList *head;

	for (w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
		v[n++] = w;
	head = MTestArgListCreate(n, v);
	free(v);
	free(copy);
	return head;
}

char *MTestArgListSearch(MTestArgList *head, const char *key)
{
	struct arg *a;

	for (a = ((struct arg *)head)->next; a; a = a->next)
		if (!strcmp(a->key, key))
			return a->val;
	return NULL;
}

char *MTestArgListGetString(MTestArgList *head, const char *key)
{
	char *v = MTestArgListSearch(head, key);

	if (!v) {
		fprintf(stderr, "argument -%s missing\n", key);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return v;
}

int MTestArgListGetInt(MTestArgList *head, const char *key)
{
	return atoi(MTestArgListGetString(head, key));
}

long MTestArgListGetLong(MTestArgList *head, const char *key)
{
	return atol(MTestArgListGetString(head, key));
}

const char *MTestArgListGetString_with_default(MTestArgList *head, const char *key,
					      const char *def)
{
	const char *v = MTestArgListSearch(head, key);

	return v ? v : def;
}

int MTestArgListGetInt_with_default(MTestArgList *head, const char *key, int def)
{
	const char *v = MTestArgListSearch(head, key);

	return v ? atoi(v) : def;
}

long MTestArgListGetLong_with_default(MTestArgList *head, const char *key, long def)
{
	const char *v = MTestArgListSearch(head, key);

	return v ? atol(v) : def;
}

/* every memory type is host memory here; "all" and "random" keep their meaning for the loops */
mtest_mem_type_e MTestArgListGetMemType(MTestArgList *head, const char *key)
{
	const char *v = MTestArgListSearch(head, key);

	if (!v || !strcmp(v, "host"))
		return MTEST_MEM_TYPE__UNREGISTERED_HOST;
	if (!strcmp(v, "reg_host"))
		return MTEST_MEM_TYPE__REGISTERED_HOST;
	if (!strcmp(v, "device"))
		return MTEST_MEM_TYPE__DEVICE;
	if (!strcmp(v, "shared"))
		return MTEST_MEM_TYPE__SHARED;
	if (!strcmp(v, "random"))
		return MTEST_MEM_TYPE__RANDOM;
	if (!strcmp(v, "all"))
		return MTEST_MEM_TYPE__ALL;
	fprintf(stderr, "unknown memory type -%s=%s\n", key, v);
	MPI_Abort(MPI_COMM_WORLD, 1);
	return MTEST_MEM_TYPE__UNSET;
}

mtest_mem_type_e MTest_memtype_random(void)
{
	return MTEST_MEM_TYPE__UNREGISTERED_HOST;
}

/* "1,2,3" */
int *MTestParseIntList(const char *str, int *num)
{
	int n = 1, i;
	const char *p;
	int *v;

	for (p = str; *p; p++)
		n += *p == ',';
	v = malloc(n * sizeof(*v));
	for (i = 0, p = str; i < n; i++) {
		v[i] = atoi(p);
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	*num = i < n ? i + 1 : n;
	return v;
}

char **MTestParseStringList(const char *str, int *num)
{
	char *copy = strdup(str), *w, *save = NULL;
	char **v = calloc(strlen(str) + 1, sizeof(*v));
	int n = 0;

	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		v[n++] = strdup(w);
	free(copy);
	*num = n;
	return v;
}

void MTestFreeStringList(char **str, int num)
{
	while (num > 0)
		free(str[--num]);
	free(str);
}

void MTestArgListDestroy(MTestArgList *head)
{
	struct arg *a = head, *n;

	for (; a; a = n) {
		n = a->next;
		free(a->key);
		free(a);
	}
}

const char *MTest_memtype_name(mtest_mem_type_e t)
{
	return t == MTEST_MEM_TYPE__UNREGISTERED_HOST ? "host" : "other";
}

/* ---- memory: host only ---- */
void MTestAlloc(size_t size, mtest_mem_type_e type, void **hostbuf, void **devicebuf,
		bool is_calloc, int device)
{
	void *p = is_calloc ? calloc(1, size ? size : 1) : malloc(size ? size : 1);

	(void)type;
	(void)device;
	if (hostbuf)
		*hostbuf = p;
	if (devicebuf)
		*devicebuf = p;
}

void MTestFree(mtest_mem_type_e type, void *hostbuf, void *devicebuf)
{
	(void)type;
	(void)devicebuf;
	free(hostbuf);
}

void MTestCopyContent(const void *sbuf, void *dbuf, size_t size, mtest_mem_type_e type)
{
	(void)type;
	if (sbuf != dbuf)
		memcpy(dbuf, sbuf, size);
}

MPI_Aint MTestDefaultMaxBufferSize(void)
{
	return 64 * 1024 * 1024;
}
