// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/fft2d: an application-shaped demonstrator of nonblocking
 * collectives (issue 30): a batch of distributed 2-D FFTs of N x N complex
 * doubles, rows spread over the ranks, with the global transpose as
 * MPI_Ialltoall. Per field: FFTs of the local rows, pack the blocks per
 * destination, all-to-all, unpack transposed, FFTs of the rows again (the
 * original columns); the result stays transposed, as usual for
 * distributed FFTs.
 *
 *   blocking   each field in turn, MPI_Alltoall
 *   pipelined  the transpose of field k runs (MPI_Ialltoall) while the
 *              rank does the row FFTs of field k + 1 and then the column
 *              FFTs of field k - 1: a software pipeline of depth two
 *   compute    the same local FFTs, packing and unpacking with no
 *              communication: the lower bound of either
 *
 * Times are the slowest rank's per field, median over the repetitions.
 * Correctness: every field is a sum of three plane waves whose
 * frequencies depend on the field, so its transform is known exactly
 * (N^2 times each amplitude at its frequency, 0 elsewhere); every output
 * element of every field is checked against it (max error relative to
 * N^2), in both modes.
 *
 * Usage: fft2d [--n N] [--fields B] [--reps R]   (N a power of two, a
 * multiple of the rank count). One line: "fft2d N B np compute blocking
 * pipelined maxerr" (us per field).
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef double complex cplx;

static int n, np, rank, rows;	/* rows = n / np per rank */
static cplx *root;		/* root[k] = exp(2 pi i k / n) */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* In-place iterative radix-2 FFT of length n (forward, unscaled). */
static void fft(cplx *x)
{
	int i, j, len, k, bit;

	for (i = 1, j = 0; i < n; i++) {
		for (bit = n >> 1; j & bit; bit >>= 1)
			j ^= bit;
		j ^= bit;
		if (i < j) {
			cplx t = x[i];

			x[i] = x[j];
			x[j] = t;
		}
	}
	for (len = 2; len <= n; len <<= 1) {
		int step = n / len;

		for (i = 0; i < n; i += len)
			for (k = 0; k < len / 2; k++) {
				cplx w = conj(root[k * step]), u = x[i + k], v = x[i + k + len / 2] * w;

				x[i + k] = u + v;
				x[i + k + len / 2] = u - v;
			}
	}
}

/* The three plane waves of field @f: frequencies (fy, fx) and amplitude. */
static void wave(int f, int w, int *fy, int *fx, cplx *a)
{
	*fy = (7 * f + 3 * w + 1) % n;
	*fx = (5 * f + 11 * w + 2) % n;
	*a = (1.0 + w) + I * (0.5 * f - w);
}

/* The local rows of field @f. */
static void fill(cplx *a, int f)
{
	int r, c, w, fy, fx;
	cplx amp;

	memset(a, 0, sizeof(cplx) * rows * n);
	for (w = 0; w < 3; w++) {
		wave(f, w, &fy, &fx, &amp);
		for (r = 0; r < rows; r++) {
			int y = rank * rows + r;

			for (c = 0; c < n; c++)
				a[(size_t)r * n + c] += amp * root[((long)fy * y + (long)fx * c) % n];
		}
	}
}

/* Row FFTs, then the block for each destination d (columns d*rows..) contiguous. */
static void rows_and_pack(cplx *a, cplx *send)
{
	int r, d;

	for (r = 0; r < rows; r++)
		fft(a + (size_t)r * n);
	for (d = 0; d < np; d++)
		for (r = 0; r < rows; r++)
			memcpy(send + ((size_t)d * rows + r) * rows, a + (size_t)r * n + (size_t)d * rows,
			       sizeof(cplx) * rows);
}

/* Block from source s holds its rows s*rows.. x my columns: transpose in, FFT. */
static void unpack_and_cols(const cplx *recv, cplx *a)
{
	int s, r, c;

	for (s = 0; s < np; s++)
		for (r = 0; r < rows; r++)
			for (c = 0; c < rows; c++)
				a[(size_t)c * n + (size_t)s * rows + r] = recv[((size_t)s * rows + r) * rows + c];
	for (r = 0; r < rows; r++)
		fft(a + (size_t)r * n);
}

/*
 * Largest error of field @f's transform, relative to n^2: local row r is
 * frequency kx = rank*rows + r of the original x axis, column ky.
 */
static double check(const cplx *a, int f)
{
	double err = 0, scale = (double)n * n;
	int r, c, w, fy, fx;
	cplx amp, want;

	for (r = 0; r < rows; r++)
		for (c = 0; c < n; c++) {
			int kx = rank * rows + r, ky = c;

			want = 0;
			for (w = 0; w < 3; w++) {
				wave(f, w, &fy, &fx, &amp);
				if (fy == ky && fx == kx)
					want += amp * scale;
			}
			err = fmax(err, cabs(a[(size_t)r * n + c] - want) / scale);
		}
	return err;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int k)
{
	qsort(v, k, sizeof(*v), cmp_d);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

enum mode { M_COMPUTE, M_BLOCKING, M_PIPELINED };

/*
 * One pass over the @nf fields in @mode; returns the time (us) and
 * accumulates the largest error into @err (not in M_COMPUTE, whose
 * "transpose" is only a local copy).
 */
static double pass(enum mode mode, int nf, cplx **a, cplx **send, cplx **recv, double *err)
{
	int block = rows * rows * 2;	/* doubles per destination */
	MPI_Request req[2];
	double t0;
	int f;

	for (f = 0; f < nf; f++)
		fill(a[f], f);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_us();
	if (mode == M_PIPELINED) {
		/* field f uses buffer set f % 2; two transposes may be in flight */
		rows_and_pack(a[0], send[0]);
		MPI_Ialltoall(send[0], block, MPI_DOUBLE, recv[0], block, MPI_DOUBLE, MPI_COMM_WORLD,
			      &req[0]);
		for (f = 0; f < nf; f++) {
			if (f + 1 < nf) {
				rows_and_pack(a[f + 1], send[(f + 1) % 2]);
				MPI_Ialltoall(send[(f + 1) % 2], block, MPI_DOUBLE, recv[(f + 1) % 2],
					      block, MPI_DOUBLE, MPI_COMM_WORLD, &req[(f + 1) % 2]);
			}
			MPI_Wait(&req[f % 2], MPI_STATUS_IGNORE);
			unpack_and_cols(recv[f % 2], a[f]);
		}
	} else {
		for (f = 0; f < nf; f++) {
			rows_and_pack(a[f], send[0]);
			if (mode == M_BLOCKING)
				MPI_Alltoall(send[0], block, MPI_DOUBLE, recv[0], block, MPI_DOUBLE,
					     MPI_COMM_WORLD);
			else
				memcpy(recv[0], send[0], sizeof(cplx) * rows * n);
			unpack_and_cols(recv[0], a[f]);
		}
	}
	t0 = now_us() - t0;
	if (mode != M_COMPUTE)
		for (f = 0; f < nf; f++)
			*err = fmax(*err, check(a[f], f));
	MPI_Allreduce(MPI_IN_PLACE, &t0, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return t0 / nf;
}

int main(int argc, char **argv)
{
	int nf = 8, reps = 5, i, k, f;
	double err = 0, *t[3];
	cplx **a, *send[2], *recv[2];

	n = 256;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--n"))
			n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--fields"))
			nf = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
	}
	if (n < 2 || (n & (n - 1)) || n % np || nf < 1 || reps < 1) {
		if (!rank)
			fprintf(stderr, "fft2d: N must be a power of two and a multiple of np\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	rows = n / np;
	root = malloc(sizeof(cplx) * n);
	a = malloc(sizeof(*a) * nf);
	for (k = 0; k < n; k++)
		root[k] = cexp(2 * M_PI * I * k / n);
	for (f = 0; f < nf; f++)
		a[f] = aligned_alloc(64, sizeof(cplx) * rows * n);
	for (k = 0; k < 2; k++) {
		send[k] = aligned_alloc(64, sizeof(cplx) * rows * n);
		recv[k] = aligned_alloc(64, sizeof(cplx) * rows * n);
	}
	for (k = 0; k < 3; k++)
		t[k] = malloc(sizeof(double) * reps);
	/* one warm-up pass of each, then the modes alternate per repetition */
	for (k = M_COMPUTE; k <= M_PIPELINED; k++)
		pass(k, nf, a, send, recv, &err);
	for (i = 0; i < reps; i++)
		for (k = M_COMPUTE; k <= M_PIPELINED; k++)
			t[k][i] = pass(k, nf, a, send, recv, &err);
	MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("fft2d %d %d %d %.0f %.0f %.0f %.2e\n", n, nf, np, median(t[M_COMPUTE], reps),
		       median(t[M_BLOCKING], reps), median(t[M_PIPELINED], reps), err);
	MPI_Finalize();
	return err < 1e-9 ? 0 : 1;
}
