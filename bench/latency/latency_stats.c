// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench/latency_stats.c: see latency_stats.h. */
#include "latency_stats.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* type 7: h = (n - 1) p, interpolated between the neighbours */
static double quantile(const double *v, int n, double p)
{
	double h = (n - 1) * p;
	int lo = (int)floor(h);

	if (lo >= n - 1)
		return v[n - 1];
	return v[lo] + (h - lo) * (v[lo + 1] - v[lo]);
}

struct lat_stat lat_stat_of(double *v, int n)
{
	struct lat_stat s = { NAN, NAN, NAN, NAN, NAN, NAN, 0 };
	double sum = 0;
	int i;

	if (n <= 0)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	s.n = n;
	s.min = v[0];
	s.max = v[n - 1];
	s.mean = sum / n;
	s.q1 = quantile(v, n, 0.25);
	s.med = quantile(v, n, 0.5);
	s.q3 = quantile(v, n, 0.75);
	return s;
}

/* ---- size lists ---- */

int lat_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	if (*end || v > LAT_MAX_SIZE / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

static int add_size(size_t *out, int n, int cap, size_t v)
{
	if (n >= cap)
		return -1;
	out[n] = v;
	return n + 1;
}

/* one item: a size or LO..HI; returns the new count or -1 */
static int parse_item(const char *item, size_t *out, int n, int cap)
{
	const char *dots = strstr(item, "..");
	char lo_s[32];
	size_t lo, hi, p;

	if (!dots)
		return lat_parse_size(item, &lo) ? -1 : add_size(out, n, cap, lo);
	if ((size_t)(dots - item) >= sizeof(lo_s))
		return -1;
	memcpy(lo_s, item, dots - item);
	lo_s[dots - item] = 0;
	if (lat_parse_size(lo_s, &lo) || lat_parse_size(dots + 2, &hi) || lo > hi)
		return -1;
	n = add_size(out, n, cap, lo);
	for (p = 1; n >= 0 && p <= hi; p <<= 1)
		if (p > lo)
			n = add_size(out, n, cap, p);
	return n;
}

int lat_parse_sizes(const char *list, size_t *out, int cap)
{
	char buf[512], *item, *save = NULL;
	int n = 0, i, u;

	if (!list || !*list || strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	if (buf[strlen(buf) - 1] == ',' || buf[0] == ',' || strstr(buf, ",,"))
		return -1;
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		n = parse_item(item, out, n, cap);
		if (n < 0)
			return -1;
	}
	if (n == 0)
		return -1;
	qsort(out, n, sizeof(*out), cmp_size);
	for (i = 1, u = 1; i < n; i++)
		if (out[i] != out[u - 1])
			out[u++] = out[i];
	return u;
}

void lat_format_sizes(const size_t *s, int n, char *buf, size_t len)
{
	size_t used = 0;
	int i, w;

	if (len)
		buf[0] = 0;
	for (i = 0; i < n && used < len; i++) {
		const char *sep = i ? "," : "";

		if (s[i] >= 1048576 && s[i] % 1048576 == 0)
			w = snprintf(buf + used, len - used, "%s%zuM", sep, s[i] / 1048576);
		else if (s[i] >= 1024 && s[i] % 1024 == 0)
			w = snprintf(buf + used, len - used, "%s%zuK", sep, s[i] / 1024);
		else
			w = snprintf(buf + used, len - used, "%s%zu", sep, s[i]);
		if (w < 0)
			return;
		used += (size_t)w;
	}
}

/* ---- kprog status ---- */

int lat_kprog_status(const int *st, int n, char *word, size_t wlen, char *desc, size_t dlen)
{
	int loaded = 0, open = 0, i;

	for (i = 0; i < n; i++) {
		loaded += !!st[2 * i];
		open += !!st[2 * i + 1];
	}
	if (n > 0 && loaded == n && open == n) {
		snprintf(word, wlen, "active");
		snprintf(desc, dlen, "active (libkprog.so loaded, /dev/kprog open on all %d ranks)", n);
		return 1;
	}
	if (loaded == 0) {
		snprintf(word, wlen, "absent");
		snprintf(desc, dlen, "absent (libkprog.so not loaded: plain Open MPI)");
	} else if (loaded == n && open == 0) {
		snprintf(word, wlen, "passthrough");
		snprintf(desc, dlen, "passthrough (libkprog.so loaded on all %d ranks, /dev/kprog open on none: Open MPI + shim, not kprog)",
			 n);
	} else {
		snprintf(word, wlen, "partial");
		snprintf(desc, dlen, "partial (libkprog.so loaded on %d, /dev/kprog open on %d of %d ranks)",
			 loaded, open, n);
	}
	return 0;
}

/* ---- CSV ---- */

static int put(char *buf, size_t len, size_t *used, const char *fmt, double v)
{
	int w;

	if (*used >= len)
		return -1;
	if (isnan(v))
		w = snprintf(buf + *used, len - *used, ",");
	else
		w = snprintf(buf + *used, len - *used, fmt, v);
	if (w < 0 || (size_t)w >= len - *used)
		return -1;
	*used += (size_t)w;
	return 0;
}

int lat_csv_format(const struct lat_row *r, char *buf, size_t len)
{
	const double *st[] = { &r->st.med, &r->st.q1, &r->st.q3, &r->st.min, &r->st.max, &r->st.mean };
	size_t used = 0;
	int w, i;

	w = snprintf(buf, len, "%s,%s,%s,%d,%s,%zu,%s", r->label, r->kprog, r->mode, r->np,
		     r->pair, r->size, r->unit);
	if (w < 0 || (size_t)w >= len)
		return -1;
	used = (size_t)w;
	for (i = 0; i < 6; i++)
		if (put(buf, len, &used, ",%.10g", *st[i]))
			return -1;
	w = snprintf(buf + used, len - used, ",%d,%ld,%d", r->st.n, r->iters, r->reps);
	if (w < 0 || (size_t)w >= len - used)
		return -1;
	used += (size_t)w;
	if (put(buf, len, &used, ",%.10g", r->mb_s))
		return -1;
	w = snprintf(buf + used, len - used, ",%ld", r->errors);
	if (w < 0 || (size_t)w >= len - used)
		return -1;
	return (int)(used + (size_t)w);
}

/* next field of *p (comma-separated, no quoting); NULL at the end */
static char *field(char **p)
{
	char *s = *p, *c;

	if (!s)
		return NULL;
	c = strchr(s, ',');
	if (c) {
		*c = 0;
		*p = c + 1;
	} else {
		*p = NULL;
	}
	return s;
}

static int word(const char *s, char *out)
{
	if (!s || !*s || strlen(s) >= LAT_WORD)
		return -1;
	strcpy(out, s);
	return 0;
}

static int num(const char *s, double *v)
{
	char *end;

	if (!s)
		return -1;
	if (!*s) {
		*v = NAN;
		return 0;
	}
	errno = 0;
	*v = strtod(s, &end);
	return (*end || errno) ? -1 : 0;
}

static int integer(const char *s, long *v)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*v = strtol(s, &end, 10);
	return (*end || errno) ? -1 : 0;
}

int lat_csv_parse(const char *line, struct lat_row *r)
{
	double *st[] = { &r->st.med, &r->st.q1, &r->st.q3, &r->st.min, &r->st.max, &r->st.mean };
	char buf[1024], *p = buf, *f;
	long l;
	int i;

	if (strlen(line) >= sizeof(buf))
		return -1;
	strcpy(buf, line);
	buf[strcspn(buf, "\r\n")] = 0;
	memset(r, 0, sizeof(*r));
	if (word(field(&p), r->label) || word(field(&p), r->kprog) || word(field(&p), r->mode))
		return -1;
	if (integer(field(&p), &l) || l < 1)
		return -1;
	r->np = (int)l;
	if (word(field(&p), r->pair))
		return -1;
	if (integer(field(&p), &l) || l < 0)
		return -1;
	r->size = (size_t)l;
	f = field(&p);
	if (!f || !*f || strlen(f) >= sizeof(r->unit))
		return -1;
	strcpy(r->unit, f);
	for (i = 0; i < 6; i++)
		if (num(field(&p), st[i]))
			return -1;
	if (integer(field(&p), &l))
		return -1;
	r->st.n = (int)l;
	if (integer(field(&p), &r->iters) || integer(field(&p), &l))
		return -1;
	r->reps = (int)l;
	if (num(field(&p), &r->mb_s) || integer(field(&p), &r->errors) || p)
		return -1;
	return 0;
}

/* ---- merging repetitions ---- */

static int status_rank(const char *s)
{
	static const char *const order[] = { "active", "passthrough", "partial", "absent" };
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(s, order[i]))
			return i;
	return 4;
}

static int same_point(const struct lat_row *a, const struct lat_row *b)
{
	return !strcmp(a->label, b->label) && !strcmp(a->mode, b->mode) && a->np == b->np &&
	       !strcmp(a->pair, b->pair) && a->size == b->size;
}

/* median of the finite values among @v; NAN if none */
static double median_finite(double *v, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	return lat_stat_of(v, m).med;
}

int lat_merge(const struct lat_row *in, int n, struct lat_row *out, int cap)
{
	double *tmp;
	int nout = 0, i, j, k, m;

	tmp = malloc(sizeof(*tmp) * (n > 0 ? n : 1));
	if (!tmp)
		return 0;
	for (i = 0; i < n && nout < cap; i++) {
		struct lat_row *o = &out[nout];
		size_t off[] = {
			offsetof(struct lat_row, st.med), offsetof(struct lat_row, st.q1),
			offsetof(struct lat_row, st.q3), offsetof(struct lat_row, st.min),
			offsetof(struct lat_row, st.max), offsetof(struct lat_row, st.mean),
			offsetof(struct lat_row, mb_s),
		};

		for (j = 0; j < nout; j++)
			if (same_point(&out[j], &in[i]))
				break;
		if (j < nout)
			continue;	/* merged with its first occurrence */
		*o = in[i];
		o->st.n = 0;
		o->iters = o->errors = 0;
		o->reps = 0;
		for (j = i; j < n; j++) {
			if (!same_point(&in[j], &in[i]))
				continue;
			o->st.n += in[j].st.n;
			o->iters += in[j].iters;
			o->errors += in[j].errors;
			o->reps += in[j].reps > 0 ? in[j].reps : 1;
			if (status_rank(in[j].kprog) > status_rank(o->kprog))
				strcpy(o->kprog, in[j].kprog);
		}
		for (k = 0; k < 7; k++) {
			m = 0;
			for (j = i; j < n; j++)
				if (same_point(&in[j], &in[i]))
					tmp[m++] = *(const double *)((const char *)&in[j] + off[k]);
			*(double *)((char *)o + off[k]) = median_finite(tmp, m);
		}
		nout++;
	}
	free(tmp);
	return nout;
}

const struct lat_row *lat_find(const struct lat_row *rows, int n, const char *label,
			       const char *mode, int np, const char *pair, size_t size)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].label, label) && !strcmp(rows[i].mode, mode) &&
		    rows[i].np == np && !strcmp(rows[i].pair, pair) && rows[i].size == size)
			return &rows[i];
	return NULL;
}

double lat_ratio(double b, double a)
{
	if (!isfinite(a) || !isfinite(b) || a <= 0)
		return NAN;
	return b / a;
}
