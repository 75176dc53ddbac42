// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
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

struct ovl_ref ovl_ref_of(const double *v, int n)
{
	struct ovl_ref r = { NAN, NAN, NAN, 0 };	/* q1, med, min */
	double *c;
	struct ovl_quart q;

	if (n <= 0)
		return r;
	c = malloc(sizeof(*c) * n);
	if (!c)
		return r;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			c[r.n++] = v[i];
	if (r.n) {
		q = ovl_quartiles(c, r.n);
		r.med = q.med;
		r.q1 = q.q1;
		r.min = c[0];
	}
	free(c);
	return r;
}

static const char *const reason_names[OVL_NREASONS] = {
	[OVL_OK] = "", [OVL_NOREF] = "no-ref", [OVL_LAT0_GT_SEQ] = "lat0>seq",
	[OVL_COMP_SHORT] = "comp-short", [OVL_NEGATIVE] = "negative",
};

const char *ovl_reason_name(int reason)
{
	return reason >= 0 && reason < OVL_NREASONS ? reason_names[reason] : "?";
}

int ovl_reason_parse(const char *s)
{
	for (int i = 0; i < OVL_NREASONS; i++)
		if (!strcmp(s, reason_names[i]))
			return i;
	return -1;
}

double ovl_ratio_checked(double tmeas, double ref, double ref_lo, double comp, int *negative)
{
	double r = ovl_ratio_eq1(tmeas, ref, comp), lo;

	if (isnan(r) || r >= 0)
		return r;
	if (isnan(ref_lo) || !(ref_lo > 0) || ref_lo > ref)
		ref_lo = ref;
	/* the ideal time at the low end of both references: T_comm's 1st quartile, T_comp's slack */
	lo = ovl_ratio_eq1(tmeas, ref_lo, comp * (1 - OVL_COMP_SLACK));
	if (lo >= 0)
		return 0;
	if (negative)
		*negative = 1;
	return NAN;
}

struct ovl_point ovl_eval_point(const struct ovl_point_in *in)
{
	struct ovl_point p = { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
			       0, in->n, OVL_OK };
	int n = in->n > 0 ? in->n : 0, cause[OVL_NREASONS] = { 0 };
	double *t = malloc(sizeof(double) * (7 * n + 1));
	double *tv = t + n, *lat = t + 2 * n, *cv = t + 3 * n, *r = t + 4 * n, *lo = t + 5 * n;
	double *call = t + 6 * n, rmin = INFINITY;
	double L = in->lat0.q1, Lmin = in->lat0.min, comp = in->comp > 0 ? in->comp : 0;
	double C = in->tcomm.q1, Cmin = in->tcomm.min;
	struct ovl_quart q;
	int nv = 0, nstat;

	if (!t) {
		p.reason = OVL_NOREF;
		return p;
	}
	if (in->sub_lat0 && !(L > 0))
		p.reason = OVL_NOREF;
	if (!(Lmin > 0) || Lmin > L)
		Lmin = L;
	if (!(Cmin > 0) || Cmin > C)
		Cmin = C;
	for (int i = 0; i < n; i++) {
		double s = in->seq[i], used = 0, T = s, c = comp;
		int bad = OVL_OK;

		if (comp > 0 && in->cpu && in->cpu[i] > 0)
			c = in->cpu[i];		/* this round's own computation time */
		if (in->sub_lat0 && L > 0) {
			/* at most the part of the sequence the computation does not cover */
			used = fmin(L, fmax(0, s - c));
			T = s - used;
			if (!(s > L))
				bad = OVL_LAT0_GT_SEQ;
		}
		if (!bad && c > 0 && T < (1 - OVL_COMP_SLACK) * c)
			bad = OVL_COMP_SHORT;
		if (isnan(s))
			bad = OVL_COMP_SHORT;
		t[i] = in->sub_lat0 && L > 0 ? s - L : s;	/* uncapped, for diagnosis */
		call[i] = c;
		if (bad) {
			cause[bad]++;
			continue;
		}
		tv[nv] = T;
		lat[nv] = used;
		cv[nv] = c;
		if (c > 0) {
			double tm = in->sub_lat0 ? s - fmin(Lmin, fmax(0, s - c)) : T, rm;

			r[nv] = ovl_ratio_eq1(T, C, c);
			/* the ideal at the low end of both references (see ovl_ratio_checked) */
			lo[nv] = ovl_ratio_eq1(T, Cmin, c * (1 - OVL_COMP_SLACK));
			rm = ovl_ratio_eq1(tm, Cmin, c);	/* the round with the fastest references */
			if (rm < rmin)
				rmin = rm;
		}
		nv++;
	}
	p.nvalid = nv;
	if (!p.reason && (n == 0 || nv < (n + 1) / 2))
		p.reason = cause[OVL_LAT0_GT_SEQ] >= cause[OVL_COMP_SHORT] && cause[OVL_LAT0_GT_SEQ] ?
			OVL_LAT0_GT_SEQ : OVL_COMP_SHORT;
	/* statistics of the valid rounds; of all rounds when none is valid */
	nstat = nv ? nv : n;
	if (nstat) {
		double *src = nv ? tv : t;

		if (comp > 0)
			p.tcomp = ovl_median(nv ? cv : call, nstat);
		q = ovl_quartiles(src, nstat);
		p.tmeas = q.med;
		p.q1 = q.q1;
		p.q3 = q.q3;
		p.tmin = src[0];
		p.iqr_pct = q.med > 0 ? 100 * (q.q3 - q.q1) / q.med : 0;
	}
	if (nv && in->sub_lat0)
		p.lat0_used = ovl_median(lat, nv);
	if (comp > 0) {
		if (!p.reason && !(C > 0))
			p.reason = OVL_NOREF;
		if (!p.reason) {
			q = ovl_quartiles(r, nv);
			p.ratio_raw = q.med;
			if (q.med >= 0) {
				p.ratio = q.med;
			} else if (ovl_median(lo, nv) >= 0) {
				p.ratio = 0;	/* within the references' spread */
			} else {
				p.reason = OVL_NEGATIVE;
			}
			p.rq1 = q.q1 < 0 ? 0 : q.q1;
			p.rq3 = q.q3 < 0 ? 0 : q.q3;
			p.rmin = rmin >= 0 ? rmin : NAN;	/* supplementary: no sign fix-up */
		} else {
			p.ratio_raw = ovl_ratio_eq1(p.tmeas, C, p.tcomp);
		}
		if (p.reason)
			p.ratio = p.rq1 = p.rq3 = p.rmin = NAN;
	}
	free(t);
	return p;
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
			  &r->tmeas_q1, &r->tmeas_q3, &r->ratio_q1, &r->ratio_q3,
			  NULL, NULL, NULL, NULL, &r->ratio_raw, &r->lat0, &r->tcomp_cpu };
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
		} else if (i == 18) {
			if (ovl_reason_parse(buf) < 0)
				return -1;
			strcpy(r->reason, buf);
		} else if (num(buf, &v)) {
			return -1;
		} else if (dst[i]) {
			*dst[i] = v;
		} else if (i == 6) {
			r->threads = isnan(v) ? 0 : (int)v;
		} else if (i == 7) {
			r->errors = isnan(v) ? 0 : (long)v;
		} else if (i == 17) {
			if (v != 0 && v != 1)
				return -1;
			r->valid = (int)v;
		} else {	/* 19, 20 */
			(i == 19 ? &r->rounds_valid : &r->rounds)[0] = isnan(v) ? -1 : (int)v;
		}
	}
	if (p || (i != 13 && i != 17 && i != ncol))	/* extra columns, or truncated */
		return -1;
	if (i < ncol) {		/* an older file: no validity columns */
		for (int k = i; k < 17; k++)
			*dst[k] = NAN;
		r->rounds_valid = r->rounds = -1;
		r->ratio_raw = r->ratio;
		r->lat0 = r->tcomp_cpu = NAN;
		r->valid = !(r->ratio < 0);
		if (!r->valid) {
			r->ratio = NAN;
			strcpy(r->reason, ovl_reason_name(OVL_NEGATIVE));
		}
	}
	if (r->valid && r->reason[0])
		return -1;	/* a valid row has no reason */
	return 0;
}

/* @v with @fmt, or nothing when it is NAN */
static int put(char *buf, size_t len, const char *sep, const char *fmt, double v)
{
	if (isnan(v))
		return snprintf(buf, len, "%s", sep);
	return snprintf(buf, len, fmt, sep, v);
}

int ovl_format_row(char *buf, size_t len, const struct ovl_row *r)
{
	int n = 0;

#define ADD(...) do {								\
		int k_ = snprintf(buf + (n < (int)len ? n : (int)len),		\
				  n < (int)len ? len - n : 0, __VA_ARGS__);		\
		n += k_;							\
	} while (0)
#define NUM(fmt, v) do {							\
		int k_ = put(buf + (n < (int)len ? n : (int)len),			\
			     n < (int)len ? len - n : 0, ",", "%s" fmt, (v));	\
		n += k_;							\
	} while (0)
	ADD("%s,%zu", r->bench, r->size);
	NUM("%.3f", r->comp);
	NUM("%.3f", r->tcomm);
	NUM("%.3f", r->tmeas);
	NUM("%.3f", r->ratio);
	ADD(",%d,%ld", r->threads, r->errors);
	NUM("%.2f", r->t0);
	NUM("%.3f", r->ratio0);
	NUM("%.1f", r->iqr_pct);
	NUM("%.3f", r->tmin);
	NUM("%.3f", r->ratio_min);
	NUM("%.3f", r->tmeas_q1);
	NUM("%.3f", r->tmeas_q3);
	NUM("%.3f", r->ratio_q1);
	NUM("%.3f", r->ratio_q3);
	ADD(",%d,%s,", r->valid ? 1 : 0, r->valid ? "" : r->reason);
	if (r->rounds_valid >= 0)
		ADD("%d", r->rounds_valid);
	ADD(",");
	if (r->rounds >= 0)
		ADD("%d", r->rounds);
	NUM("%.3f", r->ratio_raw);
	NUM("%.3f", r->lat0);
	NUM("%.3f", r->tcomp_cpu);
	ADD("\n");
#undef ADD
#undef NUM
	return n;
}

int ovl_is_grid_point(const struct ovl_row *r)
{
	if (!strcmp(r->bench, "pingpong") || !strcmp(r->bench, "pingpong-dt") ||
	    !strcmp(r->bench, "send") || !strcmp(r->bench, "lat0"))
		return 0;
	return !strcmp(r->bench, "nload") || r->comp > 0;
}

struct ovl_summary ovl_summarize(const struct ovl_row *rows, int n, const char *bench,
				 size_t rdv_threshold)
{
	struct ovl_summary s = { NAN, NAN, NAN, NAN, 0, 0, 0, 0, { 0 } };
	double *v = malloc(sizeof(double) * 4 * (n ? n : 1));
	double *all = v, *rdv = v + n, *rdv0 = v + 2 * n, *slow = v + 3 * n;
	int n0 = 0, ns = 0;

	if (!v)
		return s;
	for (int i = 0; i < n; i++) {
		const struct ovl_row *r = &rows[i];
		int rdv_pt = r->size > rdv_threshold;

		if (strcmp(r->bench, bench) || !ovl_is_grid_point(r))
			continue;
		if (!r->valid || isnan(r->ratio)) {	/* left out of the medians */
			int why = r->valid ? OVL_NOREF : ovl_reason_parse(r->reason);

			s.inv_all++;
			s.inv_rdv += rdv_pt;
			s.inv_reason[why > OVL_OK ? why : OVL_NOREF]++;
			continue;
		}
		all[s.n_all++] = r->ratio;
		if (!rdv_pt)
			continue;
		rdv[s.n_rdv++] = r->ratio;
		if (!isnan(r->ratio0) && r->ratio0 >= 0)
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
