// SPDX-License-Identifier: GPL-2.0
/* bench/overlap_stats.c: see overlap_stats.h. */
#include "overlap_stats.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Linear interpolation between order statistics (R's type 7, numpy's default). */
static double quantile_sorted(const double *v, int n, double p)
{
	double h = (n - 1) * p;
	int lo = (int)floor(h);

	if (lo >= n - 1)
		return v[n - 1];
	return v[lo] + (h - lo) * (v[lo + 1] - v[lo]);
}

struct ovl_quart ovl_quartiles(double *v, int n)
{
	struct ovl_quart q = { NAN, NAN, NAN };

	if (n <= 0)
		return q;
	qsort(v, n, sizeof(*v), cmp_double);
	q.q1 = quantile_sorted(v, n, 0.25);
	q.med = quantile_sorted(v, n, 0.5);
	q.q3 = quantile_sorted(v, n, 0.75);
	return q;
}

double ovl_median(double *v, int n)
{
	return ovl_quartiles(v, n).med;
}

double ovl_ratio_eq1(double tmeas, double tcomm, double tcomp)
{
	double mn = fmin(tcomm, tcomp), mx = fmax(tcomm, tcomp);

	if (isnan(tcomm) || isnan(tcomp) || isnan(tmeas) || !(mn > 0))
		return NAN;
	return (tmeas - mx) / mn;
}

int ovl_grid_double(double min, double max, double *out, int cap)
{
	int n = 0;

	if (!(min > 0) || !(max >= min))
		return 0;
	for (int k = 0; n < cap; k++) {
		double v = min * pow(2.0, k / 2.0);

		if (v > max * (1 + 1e-4))
			break;
		out[n++] = v;
	}
	return n;
}

int ovl_grid_size(size_t min, size_t max, size_t *out, int cap)
{
	double v[256];
	int n = 0, k;

	if (cap > 256)
		cap = 256;
	k = ovl_grid_double((double)min, (double)max, v, cap);
	for (int i = 0; i < k; i++) {
		size_t s = (size_t)llround(v[i]);

		if (!n || s != out[n - 1])	/* small sizes round to the same byte */
			out[n++] = s;
	}
	return n;
}

int ovl_parse_size(const char *s, size_t *out)
{
	char *end;
	double v, mul = 1;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0))
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1024; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	}
	if (*end == 'i' && mul > 1)	/* KiB, MiB spelled out */
		end++;
	if ((*end == 'b' || *end == 'B') && mul > 1)
		end++;
	if (*end)
		return -1;
	v *= mul;
	if (v > (double)SIZE_MAX / 2 || v != floor(v))
		return -1;
	*out = (size_t)v;
	return 0;
}

double ovl_eta(int done, int total, double elapsed)
{
	if (done <= 0 || total < done || !(elapsed >= 0))
		return -1;
	return elapsed * (total - done) / done;
}

/* Next comma-separated field of *p into @buf; NULL when none is left. */
static const char *field(const char **p, char *buf, size_t len)
{
	const char *s = *p;
	size_t n;

	if (!s)
		return NULL;
	n = strcspn(s, ",\r\n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	s += strcspn(s, ",\r\n");
	*p = *s == ',' ? s + 1 : NULL;
	return buf;
}

static int num(const char *f, double *v)
{
	char *end;

	if (!*f || !strcmp(f, "-")) {
		*v = NAN;
		return 0;
	}
	*v = strtod(f, &end);
	return *end ? -1 : 0;
}

int ovl_parse_row(const char *line, struct ovl_row *r)
{
	double *dst[] = { NULL, NULL, &r->comp, &r->tcomm, &r->tmeas, &r->ratio, NULL, NULL,
			  &r->t0, &r->ratio0, &r->iqr_pct, &r->tmin, &r->ratio_min,
			  &r->tmeas_q1, &r->tmeas_q3, &r->ratio_q1, &r->ratio_q3 };
	const int ncol = sizeof(dst) / sizeof(dst[0]);
	const char *p = line;
	char buf[64];
	double v;
	int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < ncol; i++) {
		if (!field(&p, buf, sizeof(buf)))
			break;
		if (i == 0) {
			if (!*buf || strlen(buf) >= OVL_BENCH_LEN)
				return -1;
			strcpy(r->bench, buf);
		} else if (i == 1) {
			if (ovl_parse_size(buf, &r->size))
				return -1;
		} else if (num(buf, &v)) {
			return -1;
		} else if (dst[i]) {
			*dst[i] = v;
		} else if (i == 6) {
			r->threads = isnan(v) ? 0 : (int)v;
		} else {
			r->errors = isnan(v) ? 0 : (long)v;
		}
	}
	if (p || (i != 13 && i != ncol))	/* extra columns, or truncated */
		return -1;
	for (; i < ncol; i++)
		*dst[i] = NAN;
	return 0;
}

int ovl_is_grid_point(const struct ovl_row *r)
{
	if (!strcmp(r->bench, "pingpong") || !strcmp(r->bench, "pingpong-dt") ||
	    !strcmp(r->bench, "send"))
		return 0;
	return !strcmp(r->bench, "nload") || r->comp > 0;
}

struct ovl_summary ovl_summarize(const struct ovl_row *rows, int n, const char *bench,
				 size_t rdv_threshold)
{
	struct ovl_summary s = { NAN, NAN, NAN, NAN, 0, 0 };
	double *v = malloc(sizeof(double) * 4 * (n ? n : 1));
	double *all = v, *rdv = v + n, *rdv0 = v + 2 * n, *slow = v + 3 * n;
	int n0 = 0, ns = 0;

	if (!v)
		return s;
	for (int i = 0; i < n; i++) {
		const struct ovl_row *r = &rows[i];

		if (strcmp(r->bench, bench) || !ovl_is_grid_point(r) || isnan(r->ratio))
			continue;
		all[s.n_all++] = r->ratio;
		if (r->size <= rdv_threshold)
			continue;
		rdv[s.n_rdv++] = r->ratio;
		if (!isnan(r->ratio0))
			rdv0[n0++] = r->ratio0;
		if (r->tcomm > 0 && r->t0 > 0)
			slow[ns++] = r->t0 / r->tcomm;
	}
	if (s.n_all)
		s.all = ovl_median(all, s.n_all);
	if (s.n_rdv)
		s.rdv = ovl_median(rdv, s.n_rdv);
	if (n0)
		s.rdv0 = ovl_median(rdv0, n0);
	if (ns)
		s.slow = ovl_median(slow, ns);
	free(v);
	return s;
}
