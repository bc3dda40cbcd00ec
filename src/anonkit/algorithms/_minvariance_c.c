/*
 * Compiled kernel of the m-invariance split (spec 001; the rule and its Python side are in
 * minvariance.py: perimeter_split, with reference_split as the plainly written oracle).
 *
 * split(bucket, rank, coords, spans, weighted, out): ``bucket`` and ``rank`` (int64) give
 *   each slot's bucket and list, ``coords`` (float64, slot-major) its position on each of
 *   the Q QIs, ``spans`` (Q float64) the divisors of the widths; writes each slot's class.
 *
 * Layout: per QI q an order of all slots; a segment (an open part of a bucket: s lists of
 *   N rows) is a contiguous run of it, list after list, each list sorted by (coordinate q,
 *   slot): so ties between equal coordinates go by slot order. The orders are sorted once;
 *   a split partitions every order of the segment stably (left child then right child,
 *   each list after list), so every order stays sorted and no level sorts again.
 * Scores: per QI order, the extremes over the lists of each row, accumulated forwards and
 *   backwards; the score of index i is w_left * left + w_right * right, each side the sum
 *   over the QIs in order of (max - min) / span. The lowest score wins, then the earliest
 *   index, then the earliest QI -- compared as the rule's exact rationals: a float score
 *   farther than its rounding bound from the best is decided by the floats; a nearer one
 *   (a tie, or almost) is decided exactly (exact_order: Shewchuk's expansions), so that
 *   scores equal as rationals but apart in the last bit still go to the earlier QI.
 * Numbering: buckets of one row per list are classes first (in bucket order); the others
 *   are split from a FIFO queue of segments, so classes are numbered level by level, left
 *   child before right child.
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers): numpy allocates
 * every array and this module reads and writes their buffers. The GIL is released for the
 * whole computation.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double key;
    int64_t position;
} keyed_t;

typedef struct {
    int64_t start, lists, rows;
} segment_t;

enum { DONE = 0, NO_MEMORY, NEGATIVE_ID, UNEQUAL_LISTS, NO_QI };

/* A stable merge sort by key (equal keys keep their order), ``spare`` as large as ``a``. */
static void sort_by_key(keyed_t *a, keyed_t *spare, int64_t n) {
    if (n <= 16) {
        for (int64_t i = 1; i < n; i++) {
            keyed_t x = a[i];
            int64_t j = i;
            for (; j > 0 && a[j - 1].key > x.key; j--) a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    int64_t half = n / 2;
    sort_by_key(a, spare, half);
    sort_by_key(a + half, spare, n - half);
    if (!(a[half - 1].key > a[half].key)) return; /* already in order */
    memcpy(spare, a, (size_t)half * sizeof *a);
    int64_t i = 0, j = half, k = 0;
    while (i < half && j < n) a[k++] = (a[j].key < spare[i].key) ? a[j++] : spare[i++];
    while (i < half) a[k++] = spare[i++];
}

/* -- exact comparison of two scores ------------------------------------------------------
   A score is sum_q (w_left * width_left_q + w_right * width_right_q) / span_q. Two of them are
   compared exactly as the sign of their difference times the product of the spans, each
   span split as m_q * 2^e_q (frexp) so that the products stay in range: the sign of
   sum_q x_q * 2^-e_q * prod_{p != q} m_p, x_q the difference of the two numerators. The
   arithmetic is on nonoverlapping expansions (Shewchuk, "Adaptive precision floating-point
   arithmetic", 1997): sums and products of doubles held exactly as sums of doubles. Exact
   as long as no product leaves double's exponent range (no overflow, no underflow below
   2^-1022), far beyond any table's coordinates and spans. */

/* an expansion of nonoverlapping doubles has at most one per bit of double's range */
enum { EXPANSION_MAX = 2200 };

static inline void two_sum(double a, double b, double *x, double *y) {
    double s = a + b, bv = s - a, av = s - bv;
    *x = s;
    *y = (a - av) + (b - bv);
}

static inline void fast_two_sum(double a, double b, double *x, double *y) { /* |a| >= |b| */
    double s = a + b;
    *x = s;
    *y = b - (s - a);
}

static inline void two_product(double a, double b, double *x, double *y) {
    double p = a * b;
    *x = p;
    *y = fma(a, b, -p);
}

/* h = e + b (Grow-Expansion, zeros eliminated); returns h's length */
static int grow(const double *e, int n, double b, double *h) {
    double q = b, part;
    int k = 0;
    for (int i = 0; i < n; i++) {
        two_sum(q, e[i], &q, &part);
        if (part != 0.0) h[k++] = part;
    }
    if (q != 0.0 || k == 0) h[k++] = q;
    return k;
}

/* h = e * b (Scale-Expansion, zeros eliminated); returns h's length */
static int scale(const double *e, int n, double b, double *h) {
    double q, part, p1, p0, sum;
    int k = 0;
    two_product(e[0], b, &q, &part);
    if (part != 0.0) h[k++] = part;
    for (int i = 1; i < n; i++) {
        two_product(e[i], b, &p1, &p0);
        two_sum(q, p0, &sum, &part);
        if (part != 0.0) h[k++] = part;
        fast_two_sum(p1, sum, &q, &part);
        if (part != 0.0) h[k++] = part;
    }
    if (q != 0.0 || k == 0) h[k++] = q;
    return k;
}

/* The extremes of one candidate split: per QI q2, the left half's top and bottom and the
   right half's (``ext[4 * q2 ..]``), with the halves' weights. */
typedef struct {
    double w_left, w_right;
    const double *ext;
} candidate_t;

/* The sign of score(a) - score(b), exactly; ``work`` holds 3 * EXPANSION_MAX doubles. */
static int exact_order(const candidate_t *a, const candidate_t *b, int64_t n_q,
                       const double *spans, double *work) {
    double *total = work, *term = work + EXPANSION_MAX, *next = work + 2 * EXPANSION_MAX;
    int n_total = 1;
    total[0] = 0.0;
    for (int64_t q = 0; q < n_q; q++) {
        const double parts[4][4] = {
            {a->w_left, a->ext[4 * q], a->ext[4 * q + 1], 1.0},
            {a->w_right, a->ext[4 * q + 2], a->ext[4 * q + 3], 1.0},
            {b->w_left, b->ext[4 * q], b->ext[4 * q + 1], -1.0},
            {b->w_right, b->ext[4 * q + 2], b->ext[4 * q + 3], -1.0},
        };
        int n_term = 1;
        term[0] = 0.0;
        for (int k = 0; k < 4; k++) { /* x_q += sign * w * (top - bottom), exactly */
            double width[2], scaled[4];
            two_sum(parts[k][1], -parts[k][2], &width[1], &width[0]);
            int n_scaled = scale(width, 2, parts[k][3] * parts[k][0], scaled);
            for (int j = 0; j < n_scaled; j++) {
                n_term = grow(term, n_term, scaled[j], next);
                double *swap = term; term = next; next = swap;
            }
        }
        int e_q;
        frexp(spans[q], &e_q);
        for (int j = 0; j < n_term; j++) term[j] = ldexp(term[j], -e_q);
        for (int64_t p = 0; p < n_q; p++) {
            if (p == q) continue;
            int e_p;
            n_term = scale(term, n_term, frexp(spans[p], &e_p), next);
            double *swap = term; term = next; next = swap;
        }
        for (int j = 0; j < n_term; j++) {
            n_total = grow(total, n_total, term[j], next);
            double *swap = total; total = next; next = swap;
        }
    }
    double top = total[n_total - 1]; /* the most significant component carries the sign */
    return (top > 0.0) - (top < 0.0);
}

static void *alloc(size_t count, size_t size) {
    return malloc((count ? count : 1) * size);
}

/* The helpers below are inlined with the number of QIs as a constant for 1 to 4 QIs, so
   their loops over the QIs unroll. */
#define INLINE static inline __attribute__((always_inline))

/* Per row i of a segment in one order (``seg``: s lists of r rows, Q coordinates each),
   the extremes over the lists on every QI: ``hi[q2 * r + i]``, ``lo[q2 * r + i]``. */
INLINE void row_extremes(const double *seg, int64_t s, int64_t r, int64_t n_q, double *hi,
                         double *lo) {
    for (int64_t i = 0; i < r; i++) {
        for (int64_t q2 = 0; q2 < n_q; q2++) {
            double top = seg[i * n_q + q2], bottom = top;
            for (int64_t l = 1; l < s; l++) {
                double x = seg[(l * r + i) * n_q + q2];
                top = x > top ? x : top;
                bottom = x < bottom ? x : bottom;
            }
            hi[q2 * r + i] = top;
            lo[q2 * r + i] = bottom;
        }
    }
}

/* The same for a few QIs (n_q <= 4, a constant once inlined): the extremes of a row stay
   in registers, one independent chain per QI, while the lists are read. */
INLINE void row_extremes_few(const double *seg, int64_t s, int64_t r, int64_t n_q,
                             double *hi, double *lo) {
    for (int64_t i = 0; i < r; i++) {
        double top[4], bottom[4];
        for (int64_t q2 = 0; q2 < n_q; q2++) top[q2] = bottom[q2] = seg[i * n_q + q2];
        for (int64_t l = 1; l < s; l++) {
            const double *c = seg + (l * r + i) * n_q;
            for (int64_t q2 = 0; q2 < n_q; q2++) {
                top[q2] = c[q2] > top[q2] ? c[q2] : top[q2];
                bottom[q2] = c[q2] < bottom[q2] ? c[q2] : bottom[q2];
            }
        }
        for (int64_t q2 = 0; q2 < n_q; q2++) {
            hi[q2 * r + i] = top[q2];
            lo[q2 * r + i] = bottom[q2];
        }
    }
}

static void row_extremes_any(const double *seg, int64_t s, int64_t r, int64_t n_q, double *hi,
                             double *lo) {
    switch (n_q) {
    case 1: row_extremes_few(seg, s, r, 1, hi, lo); break;
    case 2: row_extremes_few(seg, s, r, 2, hi, lo); break;
    case 3: row_extremes_few(seg, s, r, 3, hi, lo); break;
    case 4: row_extremes_few(seg, s, r, 4, hi, lo); break;
    default: row_extremes(seg, s, r, n_q, hi, lo);
    }
}

/* The stable partition of one order of a segment: per list, the positions marked left
   first (to ``scratch[l * r_left ..]``), the others after all left rows, coordinates along. */
INLINE void partition(const int64_t *seg, const double *seg_coords, int64_t s, int64_t r,
                      int64_t r_left, int64_t n_q, const unsigned char *goes_left,
                      int64_t *scratch, double *scratch_coords) {
    const int64_t n_left = s * r_left;
    for (int64_t l = 0; l < s; l++) {
        int64_t to_left = l * r_left, to_right = n_left + l * (r - r_left);
        for (int64_t k = l * r; k < (l + 1) * r; k++) {
            int64_t to = goes_left[seg[k]] ? to_left++ : to_right++;
            scratch[to] = seg[k];
            for (int64_t q2 = 0; q2 < n_q; q2++)
                scratch_coords[to * n_q + q2] = seg_coords[k * n_q + q2];
        }
    }
}

static void partition_any(const int64_t *seg, const double *seg_coords, int64_t s, int64_t r,
                          int64_t r_left, int64_t n_q, const unsigned char *goes_left,
                          int64_t *scratch, double *scratch_coords) {
    switch (n_q) {
    case 1: partition(seg, seg_coords, s, r, r_left, 1, goes_left, scratch, scratch_coords);
        break;
    case 2: partition(seg, seg_coords, s, r, r_left, 2, goes_left, scratch, scratch_coords);
        break;
    case 3: partition(seg, seg_coords, s, r, r_left, 3, goes_left, scratch, scratch_coords);
        break;
    case 4: partition(seg, seg_coords, s, r, r_left, 4, goes_left, scratch, scratch_coords);
        break;
    default: partition(seg, seg_coords, s, r, r_left, n_q, goes_left, scratch, scratch_coords);
    }
}

/* Every slot at the positions ``order[0 .. size)`` of the layout gets class ``id``. */
static void label(const int64_t *order, int64_t size, int64_t id, const int64_t *slot_at,
                  int64_t *out) {
    for (int64_t k = 0; k < size; k++) out[slot_at[order[k]]] = id;
}

static int run_split(int64_t n, const int64_t *bucket, const int64_t *rank, const double *coords,
                     int64_t n_q, const double *spans, int weighted, int64_t *out) {
    int status = NO_MEMORY;
    int64_t n_buckets = 0;
    for (int64_t k = 0; k < n; k++) {
        if (bucket[k] < 0 || rank[k] < 0) return NEGATIVE_ID;
        if (bucket[k] >= n_buckets) n_buckets = bucket[k] + 1;
    }
    int64_t *lists = calloc((size_t)(n_buckets ? n_buckets : 1), sizeof *lists);
    int64_t *pair_first = alloc((size_t)n_buckets + 1, sizeof *pair_first);
    int64_t *rows = alloc((size_t)n_buckets, sizeof *rows);
    int64_t *pair_next = NULL, *base = NULL, **order = NULL, *scratch = NULL;
    double *left = NULL, *right = NULL, *hi_v = NULL, *lo_v = NULL, **placed = NULL,
           *scratch_coords = NULL, *halves = NULL, *best_ext = NULL, *work = NULL;
    keyed_t *keyed = NULL, *spare = NULL;
    segment_t *queue = NULL;
    unsigned char *goes_left = NULL;
    if (!lists || !pair_first || !rows) goto finish;
    for (int64_t k = 0; k < n; k++)
        if (rank[k] + 1 > lists[bucket[k]]) lists[bucket[k]] = rank[k] + 1;
    pair_first[0] = 0;
    for (int64_t b = 0; b < n_buckets; b++) pair_first[b + 1] = pair_first[b] + lists[b];
    pair_next = calloc((size_t)(pair_first[n_buckets] ? pair_first[n_buckets] : 1),
                       sizeof *pair_next);
    base = alloc((size_t)n, sizeof *base);
    if (!pair_next || !base) goto finish;
    for (int64_t k = 0; k < n; k++) pair_next[pair_first[bucket[k]] + rank[k]]++;
    /* every list of a bucket holds the same number of rows; lay the buckets out in order,
       each list after list, slots in slot order */
    int64_t offset = 0, max_rows = 0, max_size = 0;
    for (int64_t b = 0; b < n_buckets; b++) {
        rows[b] = lists[b] ? pair_next[pair_first[b]] : 0;
        for (int64_t p = pair_first[b]; p < pair_first[b + 1]; p++) {
            if (pair_next[p] != rows[b]) { status = UNEQUAL_LISTS; goto finish; }
            pair_next[p] = offset;
            offset += rows[b];
        }
        if (rows[b] > max_rows) max_rows = rows[b];
        if (lists[b] * rows[b] > max_size) max_size = lists[b] * rows[b];
    }
    for (int64_t k = 0; k < n; k++) base[pair_next[pair_first[bucket[k]] + rank[k]]++] = k;
    /* from here on a slot is named by its position p in this layout (base[p] is the slot);
       within a list positions follow slot order */
    /* buckets of one row per list are classes already, numbered first */
    int64_t next_class = 0, n_open = 0;
    offset = 0;
    for (int64_t b = 0; b < n_buckets; b++) {
        if (rows[b] == 1)
            for (int64_t p = offset; p < offset + lists[b]; p++) out[base[p]] = next_class;
        if (rows[b] == 1) next_class++;
        else if (rows[b] > 1) n_open++;
        offset += lists[b] * rows[b];
    }
    if (!n_open) { status = DONE; goto finish; }
    if (n_q < 1) { status = NO_QI; goto finish; }

    order = calloc((size_t)n_q, sizeof *order);
    keyed = alloc((size_t)max_rows, sizeof *keyed);
    spare = alloc((size_t)max_rows, sizeof *spare);
    placed = calloc((size_t)n_q, sizeof *placed);
    scratch_coords = alloc((size_t)(max_size * n_q), sizeof *scratch_coords);
    queue = alloc((size_t)n + 1, sizeof *queue); /* every segment holds >= 2 slots */
    scratch = alloc((size_t)max_size, sizeof *scratch);
    goes_left = alloc((size_t)n, sizeof *goes_left);
    hi_v = alloc((size_t)(n_q * max_rows), sizeof *hi_v);
    lo_v = alloc((size_t)(n_q * max_rows), sizeof *lo_v);
    left = alloc((size_t)max_rows, sizeof *left);
    right = alloc((size_t)max_rows, sizeof *right);
    /* per split index i and QI q2, the halves' extremes (``halves[(i * Q + q2) * 4 ..]``: left
       top, left bottom, right top, right bottom), read only to decide a near tie exactly */
    halves = alloc((size_t)(4 * n_q * max_rows), sizeof *halves);
    best_ext = alloc((size_t)(4 * n_q), sizeof *best_ext);
    work = alloc((size_t)(3 * EXPANSION_MAX), sizeof *work);
    if (!order || !keyed || !spare || !placed || !scratch_coords || !queue || !scratch ||
        !goes_left || !hi_v || !lo_v || !left || !right || !halves || !best_ext || !work)
        goto finish;
    for (int64_t q = 0; q < n_q; q++) {
        order[q] = alloc((size_t)n, sizeof **order);
        placed[q] = alloc((size_t)(n * n_q), sizeof **placed);
        if (!order[q] || !placed[q]) goto finish;
    }
    /* the per-QI orders: every list sorted by (coordinate, slot), stably from slot order;
       ``placed[q]`` holds the coordinates in order q (row p * Q + q2 for the slot at p), so
       the scores read memory in sequence and every split moves them along */
    int64_t tail = 0;
    offset = 0;
    for (int64_t b = 0; b < n_buckets; b++) {
        int64_t s = lists[b], r = rows[b];
        if (r > 1) {
            queue[tail].start = offset;
            queue[tail].lists = s;
            queue[tail].rows = r;
            tail++;
            for (int64_t q = 0; q < n_q; q++) {
                for (int64_t l = 0; l < s; l++) {
                    const int64_t first = offset + l * r;
                    int64_t *to = order[q] + first;
                    for (int64_t k = 0; k < r; k++) {
                        keyed[k].key = coords[base[first + k] * n_q + q];
                        keyed[k].position = first + k;
                    }
                    sort_by_key(keyed, spare, r);
                    for (int64_t k = 0; k < r; k++) {
                        to[k] = keyed[k].position;
                        memcpy(placed[q] + (first + k) * n_q, coords + base[to[k]] * n_q,
                               (size_t)n_q * sizeof **placed);
                    }
                }
            }
        }
        offset += s * r;
    }

    for (int64_t head = 0; head < tail; head++) {
        const int64_t start = queue[head].start, s = queue[head].lists, r = queue[head].rows;
        double best_score = INFINITY;
        int64_t best_q = 0, best_i = 1;
        for (int64_t q = 0; q < n_q; q++) {
            row_extremes_any(placed[q] + start * n_q, s, r, n_q, hi_v, lo_v);
            for (int64_t i = 0; i < r; i++) left[i] = right[i] = 0.0;
            for (int64_t q2 = 0; q2 < n_q; q2++) {
                const double *h = hi_v + q2 * r, *w = lo_v + q2 * r, span = spans[q2];
                /* split at i: left = rows < i, right = rows >= i; a width is divided again
                   only when an extreme moved (the same quotient otherwise) */
                double top = h[0], bottom = w[0], width = (top - bottom) / span;
                for (int64_t i = 1; i < r; i++) {
                    left[i] += width;
                    halves[(i * n_q + q2) * 4] = top;
                    halves[(i * n_q + q2) * 4 + 1] = bottom;
                    if (h[i] > top || w[i] < bottom) {
                        top = h[i] > top ? h[i] : top;
                        bottom = w[i] < bottom ? w[i] : bottom;
                        width = (top - bottom) / span;
                    }
                }
                top = h[r - 1];
                bottom = w[r - 1];
                width = (top - bottom) / span;
                for (int64_t i = r - 1; i >= 1; i--) {
                    if (h[i] > top || w[i] < bottom) {
                        top = h[i] > top ? h[i] : top;
                        bottom = w[i] < bottom ? w[i] : bottom;
                        width = (top - bottom) / span;
                    }
                    right[i] += width;
                    halves[(i * n_q + q2) * 4 + 2] = top;
                    halves[(i * n_q + q2) * 4 + 3] = bottom;
                }
            }
            for (int64_t i = 1; i < r; i++) {
                double w_left = weighted ? (double)(i * s) : 1.0;
                double w_right = weighted ? (double)((r - i) * s) : 1.0;
                double score = w_left * left[i] + w_right * right[i];
                /* every term is >= 0, and each float score is within (Q + 3) units of
                   roundoff (2^-53) of its exact value, relatively: a width's subtraction and
                   division, Q - 1 additions, the weights' products and their sum. Apart by
                   more than twice both bounds, the floats order two scores as the rationals
                   do; nearer, they are compared exactly. */
                double bound = 2.0 * (double)(n_q + 4) * 0x1p-53 *
                               (score > best_score ? score : best_score);
                int better;
                if (best_score == INFINITY || score < best_score - bound) better = 1;
                else if (score > best_score + bound) better = 0;
                else {
                    candidate_t here = {w_left, w_right, halves + i * n_q * 4};
                    candidate_t best = {weighted ? (double)(best_i * s) : 1.0,
                                        weighted ? (double)((r - best_i) * s) : 1.0,
                                        best_ext};
                    better = exact_order(&here, &best, n_q, spans, work) < 0;
                }
                if (better) { /* strictly: earlier index, then earlier QI */
                    best_score = score;
                    best_q = q;
                    best_i = i;
                    memcpy(best_ext, halves + i * n_q * 4, (size_t)(4 * n_q) * sizeof *best_ext);
                }
            }
        }
        /* left: the first best_i rows of every list in the chosen order */
        const int64_t *chosen = order[best_q] + start;
        for (int64_t l = 0; l < s; l++)
            for (int64_t i = 0; i < r; i++) goes_left[chosen[l * r + i]] = i < best_i;
        const int64_t n_left = s * best_i;
        for (int64_t q = 0; q < n_q; q++) {
            int64_t *seg = order[q] + start;
            double *seg_coords = placed[q] + start * n_q;
            partition_any(seg, seg_coords, s, r, best_i, n_q, goes_left, scratch,
                          scratch_coords);
            memcpy(seg, scratch, (size_t)(s * r) * sizeof *seg);
            memcpy(seg_coords, scratch_coords, (size_t)(s * r * n_q) * sizeof *seg_coords);
        }
        const segment_t children[2] = {{start, s, best_i}, {start + n_left, s, r - best_i}};
        for (int c = 0; c < 2; c++) {
            if (children[c].rows == 1)
                label(order[0] + children[c].start, s, next_class++, base, out);
            else queue[tail++] = children[c];
        }
    }
    status = DONE;

finish:
    for (int64_t q = 0; q < n_q; q++) {
        if (order) free(order[q]);
        if (placed) free(placed[q]);
    }
    free(order); free(lists); free(pair_first); free(rows); free(pair_next); free(base);
    free(keyed); free(spare); free(placed); free(scratch_coords); free(queue); free(scratch); free(goes_left); free(hi_v); free(lo_v);
    free(left); free(right); free(halves); free(best_ext); free(work);
    return status;
}

static PyObject *c_split(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bb, rb, cb, sb, ob;
    int weighted;
    if (!PyArg_ParseTuple(args, "y*y*y*y*pw*", &bb, &rb, &cb, &sb, &weighted, &ob))
        return NULL;
    Py_ssize_t n = bb.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n_q = sb.len / (Py_ssize_t)sizeof(double);
    int status = DONE;
    if (rb.len != bb.len || ob.len != bb.len || cb.len != n * n_q * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "split: the slot arrays differ in length");
        status = -1;
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = run_split(n, bb.buf, rb.buf, cb.buf, n_q, sb.buf, weighted, ob.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&bb); PyBuffer_Release(&rb); PyBuffer_Release(&cb);
    PyBuffer_Release(&sb); PyBuffer_Release(&ob);
    switch (status) {
    case DONE: Py_RETURN_NONE;
    case NO_MEMORY: return PyErr_NoMemory();
    case NEGATIVE_ID:
        PyErr_SetString(PyExc_ValueError, "split: bucket ids and list ranks must be >= 0");
        return NULL;
    case UNEQUAL_LISTS:
        PyErr_SetString(PyExc_ValueError, "every list of a bucket must have the same length");
        return NULL;
    case NO_QI:
        PyErr_SetString(PyExc_ValueError, "split: a bucket of several rows per list needs at "
                        "least one quasi-identifier to split by");
        return NULL;
    default: return NULL; /* the error is set */
    }
}

static PyMethodDef methods[] = {
    {"split", c_split, METH_VARARGS,
     "The perimeter split of m-invariance buckets into classes (spec 001)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_minvariance_c", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit__minvariance_c(void) { return PyModule_Create(&module); }
