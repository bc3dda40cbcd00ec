/*
 * Compiled inner loop of Mondrian (see _mondrian_kernel.py for the Python side).
 *
 * Rows of the working matrix are permuted so that every partition is a contiguous segment
 * [start, end). For each segment, propose() picks the best cut dimension, finds the (lower)
 * median m of that dimension and moves the segment to the other copy of the matrix as
 * < m | == m | > m, recording the code ranges of the three parts; advance() turns the cuts
 * the driver accepted into the next round's partitions.
 *
 * Only the CPython API and the buffer protocol are used, so building needs no numpy
 * headers: numpy allocates every array and this module reads and writes their buffers.
 * The code matrix is int16 or int32 (int16 halves the memory traffic when every code fits):
 * the kernel is written once, in the #else branch at the end of this file, and compiled
 * for each type by including this file into itself with CODE_T and KERNEL() defined.
 */
#ifndef CODE_T

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* dimension strategies, as in _mondrian_kernel.STRATEGIES */
enum { WIDEST = 0, ENTROPY = 1, DISTINCT = 2, RANDOM = 3 };

/* Bitmasks over the dimensions are int64 (excluded, tried) and the code sets of small
 * unordered columns are uint64, so a table has at most 64 QIs here. */
#define MAX_DIMS 64

/* 64-bit LCG (Knuth's MMIX constants) for the seeded RANDOM strategy */
#define LCG_MUL 6364136223846793005ULL
#define LCG_ADD 1442695040888963407ULL

/* The static description of the QIs, one entry per column unless said otherwise. */
typedef struct {
    const double *mags;          /* every column's code magnitudes, from mag_offsets[j];
                                    NaN for the missing code */
    const int64_t *mag_offsets;
    const double *spans;         /* the column's domain span (max - min magnitude) */
    const int64_t *cardinalities;
    const uint8_t *unordered;    /* a small categorical column: ranged by its set of codes */
    const uint8_t *tree;         /* has a hierarchy whose subtrees are runs of codes */
    const int32_t *tree_nodes;   /* from tree_off[j]: node of (code, level), height per code */
    const double *tree_under;    /* same layout: leaves under that node */
    const int64_t *tree_off;
    const int64_t *tree_height;
} Columns;

/* A round's open partitions (lo, hi, bits: n_parts x d). */
typedef struct {
    int64_t *starts, *ends;
    int8_t *side;                /* which copy of the matrix holds the segment */
    int64_t *excluded, *tried;
    int64_t *lo, *hi;
    uint64_t *bits;
} Parts;

/* What propose() found per partition (part_*: n_parts x 3 x d, for < m, == m, > m). */
typedef struct {
    int64_t *dim, *cut_le, *cut_lt;
    int64_t *part_lo, *part_hi;
    uint64_t *part_bits;
} Proposal;

typedef struct {
    void *Xs;                    /* (2, n, d) codes, int16 or int32 */
    int64_t *Rs;                 /* (2, n) original row of each position */
    int64_t n, d, min_size;
    int strategy;
    uint64_t seed;
    Columns col;
    Parts parts;
    Proposal out;
} Round;

static int popcount64(uint64_t x)
{
    int count = 0;
    while (x) {
        x &= x - 1;
        count++;
    }
    return count;
}

/* Lowest hierarchy level at which codes a and b share a node. */
static int64_t tree_level(const int32_t *nodes, int64_t off, int64_t height, int64_t a,
                          int64_t b)
{
    for (int64_t level = 0; level < height; level++)
        if (nodes[off + a * height + level] == nodes[off + b * height + level])
            return level;
    return height - 1;
}

/* Index into codes of the last code left of the best boundary between subtrees at level
 * (the one closest to the middle with both sides >= min_size), or -1. codes/counts list
 * the n codes present in increasing order with their counts. */
static int64_t tree_cut(const int32_t *nodes, int64_t off, int64_t height, int64_t level,
                        const int64_t *codes, const int64_t *counts, int64_t n, int64_t size,
                        int64_t min_size)
{
    int64_t best = -1;
    double best_gap = size + 1.0;
    int64_t left = counts[0];
    for (int64_t i = 1; i < n; i++) {
        int boundary = nodes[off + codes[i - 1] * height + level]
                       != nodes[off + codes[i] * height + level];
        if (boundary && left >= min_size && size - left >= min_size) {
            double gap = fabs(left - size / 2.0);
            if (gap < best_gap) {
                best_gap = gap;
                best = i - 1;
            }
        }
        left += counts[i];
    }
    return best;
}

/* First position of a sorted run holding a value >= m (side="left"), or > m ("right"). */
static int64_t search_sorted(const int64_t *sorted, int64_t n, int64_t m, int right)
{
    int64_t a = 0, b = n;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (sorted[mid] < m || (right && sorted[mid] == m))
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* Sorting the codes of one column of a segment: introsort, so that no input order makes
 * it quadratic (heapsort takes over when quicksort recurses too deep). */
static void swap64(int64_t *a, int64_t *b)
{
    int64_t t = *a;
    *a = *b;
    *b = t;
}

static void insertion_sort(int64_t *a, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        int64_t v = a[i], j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

static void heap_sort(int64_t *a, int64_t n)
{
    for (int64_t end = n, start = n / 2; end > 1;) {
        if (start > 0)
            start--;             /* still building the heap */
        else
            swap64(&a[0], &a[--end]);
        for (int64_t root = start, child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && a[child + 1] > a[child])
                child++;
            if (a[root] >= a[child])
                break;
            swap64(&a[root], &a[child]);
        }
    }
}

static void intro_sort(int64_t *a, int64_t n, int depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(a, n);
            return;
        }
        /* median of three as the pivot; Hoare's scheme keeps runs of equal codes (the
         * common case) balanced */
        int64_t mid = n / 2;
        if (a[mid] < a[0])
            swap64(&a[mid], &a[0]);
        if (a[n - 1] < a[mid]) {
            swap64(&a[n - 1], &a[mid]);
            if (a[mid] < a[0])
                swap64(&a[mid], &a[0]);
        }
        int64_t pivot = a[mid], i = -1, j = n;
        for (;;) {
            do i++; while (a[i] < pivot);
            do j--; while (a[j] > pivot);
            if (i >= j)
                break;
            swap64(&a[i], &a[j]);
        }
        /* recurse into the smaller side, loop on the larger: the stack stays O(log n) */
        int64_t left = j + 1;
        if (left < n - left) {
            intro_sort(a, left, depth);
            a += left;
            n -= left;
        } else {
            intro_sort(a + left, n - left, depth);
            n = left;
        }
    }
    insertion_sort(a, n);
}

static void sort_codes(int64_t *a, int64_t n)
{
    int depth = 0;
    for (int64_t m = n; m > 1; m >>= 1)
        depth += 2;
    intro_sort(a, n, depth);
}

/* Bit k of an int64 bitmask over the dimensions (k < 64; bit 63 is the sign bit). */
static int64_t dim_bit(int64_t k)
{
    return (int64_t)((uint64_t)1 << k);
}

/* The next round's partitions into next (returns how many), the final segments into done
 * from *n_done on; -1 if done has no room left (room says how much it has in all). */
static int64_t advance_round(const Parts *parts, const Proposal *prop, const int64_t *cut,
                             const uint8_t *take_lt, const uint8_t *keep_trying,
                             int64_t n_parts, int64_t d, int64_t min_size,
                             int remove_cut_dimension, int single_dimensional,
                             int64_t *done_starts, int64_t *done_ends, int8_t *done_side,
                             int64_t room, Py_ssize_t *n_done, Parts *next)
{
    int64_t n_next = 0, k = *n_done;
    for (int64_t p = 0; p < n_parts; p++) {
        const int64_t s = parts->starts[p], e = parts->ends[p], dim = prop->dim[p];
        if (cut[p] < 0) {
            if (keep_trying[p]) {
                /* tried again, on another dimension */
                next->starts[n_next] = s;
                next->ends[n_next] = e;
                next->side[n_next] = parts->side[p];
                next->excluded[n_next] = parts->excluded[p];
                next->tried[n_next] = parts->tried[p] | dim_bit(dim > 0 ? dim : 0);
                memcpy(next->lo + n_next * d, parts->lo + p * d, (size_t)d * sizeof(int64_t));
                memcpy(next->hi + n_next * d, parts->hi + p * d, (size_t)d * sizeof(int64_t));
                memcpy(next->bits + n_next * d, parts->bits + p * d,
                       (size_t)d * sizeof(uint64_t));
                n_next++;
            } else {
                if (k == room)
                    return -1;
                done_starts[k] = s;
                done_ends[k] = e;
                done_side[k] = parts->side[p];
                k++;
            }
            continue;
        }
        int64_t child_excluded = parts->excluded[p];
        if (remove_cut_dimension)
            child_excluded |= dim_bit(dim);
        for (int half = 0; half < 2; half++) {
            const int64_t cs = half == 0 ? s : cut[p], ce = half == 0 ? cut[p] : e;
            if (single_dimensional || ce - cs < 2 * min_size) {
                if (k == room)
                    return -1;
                done_starts[k] = cs;
                done_ends[k] = ce;
                done_side[k] = parts->side[p];
                k++;
                continue;
            }
            const int64_t q = n_next++;
            next->starts[q] = cs;
            next->ends[q] = ce;
            next->side[q] = parts->side[p];
            next->excluded[q] = child_excluded;
            next->tried[q] = 0;
            /* left = (< m) and (== m) for x <= m, only (< m) for x < m; right the rest */
            const int64_t own = (p * 3 + (half == 0 ? 0 : 2)) * d, equal = (p * 3 + 1) * d;
            const int with_equal = (half == 0) != (take_lt[p] != 0);
            for (int64_t j = 0; j < d; j++) {
                int64_t c_lo = prop->part_lo[own + j], c_hi = prop->part_hi[own + j];
                uint64_t c_bits = prop->part_bits[own + j];
                if (with_equal) {
                    c_lo = prop->part_lo[equal + j] < c_lo ? prop->part_lo[equal + j] : c_lo;
                    c_hi = prop->part_hi[equal + j] > c_hi ? prop->part_hi[equal + j] : c_hi;
                    c_bits |= prop->part_bits[equal + j];
                }
                next->lo[q * d + j] = c_lo;
                next->hi[q * d + j] = c_hi;
                next->bits[q * d + j] = c_bits;
            }
        }
    }
    *n_done = k;
    return n_next;
}

/* Each kernel function exists once per code type, named with the type's suffix. The
 * include names this file: a quoted include is looked up next to the including file
 * first, wherever the compiler is started from. */
#define CODE_T int16_t
#define KERNEL(name) name##_int16
#include "_mondrian_c.c"
#undef CODE_T
#undef KERNEL

#define CODE_T int32_t
#define KERNEL(name) name##_int32
#include "_mondrian_c.c"
#undef CODE_T
#undef KERNEL

/* ------------------------------------------------------------------------------------
 * From Python: buffers checked for type, shape and layout before any loop trusts them.
 */

/* The kind of a buffer's items ('i' signed, 'u' unsigned integer, 'f' float, 'b' bool),
 * or 0 for anything else, including a byte order other than the machine's. */
static char item_kind(const char *format)
{
    if (format == NULL)
        return 'u';              /* plain bytes */
    if (*format == '@' || *format == '=')
        format++;
    else if (*format == '<' || *format == '>' || *format == '!') {
        const uint16_t one = 1;
        int little = *(const uint8_t *)&one == 1;
        if ((*format == '<') != little)
            return 0;
        format++;
    }
    if (format[0] == '\0' || format[1] != '\0')
        return 0;
    if (strchr("bhilqn", format[0]))
        return 'i';
    if (strchr("BHILQN", format[0]))
        return 'u';
    if (strchr("efd", format[0]))
        return 'f';
    if (format[0] == '?')
        return 'b';
    return 0;
}

/* item size of the code matrix, which is int16 or int32 */
#define CODES 0

static int right_type(const Py_buffer *view, char kind, Py_ssize_t itemsize)
{
    if (item_kind(view->format) != kind)
        return 0;
    if (itemsize == CODES)
        return view->itemsize == 2 || view->itemsize == 4;
    return view->itemsize == itemsize;
}

/* numpy's name of the type, for messages */
static void type_name(char *out, size_t size, char kind, Py_ssize_t itemsize)
{
    if (itemsize == CODES)
        snprintf(out, size, "int16 or int32");
    else if (kind == 'b')
        snprintf(out, size, "bool");
    else
        snprintf(out, size, "%s%d", kind == 'i' ? "int" : kind == 'u' ? "uint" : "float",
                 (int)(8 * itemsize));
}

/* The buffers a call holds, released together whatever happens. */
typedef struct {
    const char *function;
    Py_buffer views[32];
    int count;
} Arrays;

static void release_all(Arrays *arrays)
{
    while (arrays->count > 0)
        PyBuffer_Release(&arrays->views[--arrays->count]);
}

/* The buffer of obj as a C-contiguous array of ndim dimensions with items of the given
 * kind and size (or CODES); shape[k] < 0 accepts any length. */
static Py_buffer *take(Arrays *arrays, PyObject *obj, const char *name, char kind,
                       Py_ssize_t itemsize, int writable, int ndim, const Py_ssize_t *shape)
{
    if (arrays->count == (int)(sizeof arrays->views / sizeof arrays->views[0])) {
        PyErr_Format(PyExc_SystemError, "%s: too many arrays", arrays->function);
        return NULL;
    }
    Py_buffer *view = &arrays->views[arrays->count];
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: %s must be an array, got %.200s",
                         arrays->function, name, Py_TYPE(obj)->tp_name);
        }
        return NULL;
    }
    arrays->count++;
    if (!right_type(view, kind, itemsize)) {
        char expected[32];
        type_name(expected, sizeof expected, kind, itemsize);
        PyErr_Format(PyExc_TypeError, "%s: %s must be %s, got format '%s' of %zd bytes",
                     arrays->function, name, expected, view->format ? view->format : "B",
                     view->itemsize);
        return NULL;
    }
    if (writable && view->readonly) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be writable", arrays->function, name);
        return NULL;
    }
    if (!PyBuffer_IsContiguous(view, 'C')) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be C-contiguous", arrays->function,
                     name);
        return NULL;
    }
    if (view->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %s must have %d dimension(s), got %d",
                     arrays->function, name, ndim, view->ndim);
        return NULL;
    }
    for (int k = 0; k < ndim; k++) {
        if (shape[k] >= 0 && view->shape[k] != shape[k]) {
            PyErr_Format(PyExc_ValueError,
                         "%s: %s must have length %zd along axis %d, got %zd",
                         arrays->function, name, shape[k], k, view->shape[k]);
            return NULL;
        }
    }
    return view;
}

/* The items of a tuple of arrays, checked to be a tuple of that many. */
static PyObject **tuple_items(Arrays *arrays, PyObject *tuple, const char *name,
                              Py_ssize_t size)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != size) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a tuple of %zd arrays",
                     arrays->function, name, size);
        return NULL;
    }
    return &PyTuple_GET_ITEM(tuple, 0);
}

/* The code matrix, (2, n, d) or (n, d), no wider than MAX_DIMS. */
static Py_buffer *take_codes(Arrays *arrays, PyObject *obj, const char *name, int ndim,
                             const Py_ssize_t *shape)
{
    Py_buffer *view = take(arrays, obj, name, 'i', CODES, 1, ndim, shape);
    if (view == NULL)
        return NULL;
    if (view->shape[ndim - 1] > MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d quasi-identifiers, got %zd",
                     arrays->function, MAX_DIMS, view->shape[ndim - 1]);
        return NULL;
    }
    return view;
}

/* the parts tuple: (starts, ends, side, excluded, tried, lo, hi, bits); side is written
 * by propose(), all of them when the tuple is advance()'s next */
static int take_parts(Arrays *arrays, PyObject *tuple, Py_ssize_t d, int writable,
                      Parts *parts, Py_ssize_t *n_parts)
{
    PyObject **items = tuple_items(arrays, tuple, "parts", 8);
    if (items == NULL)
        return -1;
    Py_buffer *starts = take(arrays, items[0], "starts", 'i', 8, writable, 1,
                             (Py_ssize_t[]){-1});
    if (starts == NULL)
        return -1;
    Py_ssize_t P = starts->shape[0];
    const Py_ssize_t vec[1] = {P}, mat[2] = {P, d};
    Py_buffer *ends = take(arrays, items[1], "ends", 'i', 8, writable, 1, vec);
    Py_buffer *side = ends ? take(arrays, items[2], "side", 'i', 1, 1, 1, vec) : NULL;
    Py_buffer *excl = side ? take(arrays, items[3], "excluded", 'i', 8, writable, 1, vec) : NULL;
    Py_buffer *tried = excl ? take(arrays, items[4], "tried", 'i', 8, writable, 1, vec) : NULL;
    Py_buffer *lo = tried ? take(arrays, items[5], "lo", 'i', 8, writable, 2, mat) : NULL;
    Py_buffer *hi = lo ? take(arrays, items[6], "hi", 'i', 8, writable, 2, mat) : NULL;
    Py_buffer *bits = hi ? take(arrays, items[7], "bits", 'u', 8, writable, 2, mat) : NULL;
    if (bits == NULL)
        return -1;
    *parts = (Parts){starts->buf, ends->buf, side->buf, excl->buf, tried->buf, lo->buf,
                     hi->buf, bits->buf};
    *n_parts = P;
    return 0;
}

/* the proposal tuple: (dim, cut_le, cut_lt, part_lo, part_hi, part_bits) */
static int take_proposal(Arrays *arrays, PyObject *tuple, Py_ssize_t n_parts, Py_ssize_t d,
                         int writable, Proposal *out)
{
    PyObject **items = tuple_items(arrays, tuple, "proposal", 6);
    if (items == NULL)
        return -1;
    const Py_ssize_t vec[1] = {n_parts}, cube[3] = {n_parts, 3, d};
    Py_buffer *dim = take(arrays, items[0], "dim", 'i', 8, writable, 1, vec);
    Py_buffer *le = dim ? take(arrays, items[1], "cut_le", 'i', 8, writable, 1, vec) : NULL;
    Py_buffer *lt = le ? take(arrays, items[2], "cut_lt", 'i', 8, writable, 1, vec) : NULL;
    Py_buffer *lo = lt ? take(arrays, items[3], "part_lo", 'i', 8, writable, 3, cube) : NULL;
    Py_buffer *hi = lo ? take(arrays, items[4], "part_hi", 'i', 8, writable, 3, cube) : NULL;
    Py_buffer *bits = hi ? take(arrays, items[5], "part_bits", 'u', 8, writable, 3, cube)
                         : NULL;
    if (bits == NULL)
        return -1;
    *out = (Proposal){dim->buf, le->buf, lt->buf, lo->buf, hi->buf, bits->buf};
    return 0;
}

/* the columns tuple: (mags, mag_offsets, spans, cardinalities, unordered, tree,
 * tree_nodes, tree_under, tree_off, tree_height) */
static int take_columns(Arrays *arrays, PyObject *tuple, Py_ssize_t d, Columns *col)
{
    PyObject **items = tuple_items(arrays, tuple, "columns", 10);
    if (items == NULL)
        return -1;
    const Py_ssize_t any[1] = {-1}, vec[1] = {d};
    Py_buffer *v[10];
    static const struct { const char *name; char kind; Py_ssize_t itemsize; int per_dim; }
    spec[10] = {
        {"mags", 'f', 8, 0}, {"mag_offsets", 'i', 8, 0}, {"spans", 'f', 8, 1},
        {"cardinalities", 'i', 8, 1}, {"unordered", 'b', 1, 1}, {"tree", 'b', 1, 1},
        {"tree_nodes", 'i', 4, 0}, {"tree_under", 'f', 8, 0}, {"tree_off", 'i', 8, 1},
        {"tree_height", 'i', 8, 1},
    };
    for (int k = 0; k < 10; k++) {
        v[k] = take(arrays, items[k], spec[k].name, spec[k].kind, spec[k].itemsize, 0, 1,
                    spec[k].per_dim ? vec : any);
        if (v[k] == NULL)
            return -1;
    }
    *col = (Columns){v[0]->buf, v[1]->buf, v[2]->buf, v[3]->buf, v[4]->buf, v[5]->buf,
                     v[6]->buf, v[7]->buf, v[8]->buf, v[9]->buf};
    return 0;
}

PyDoc_STRVAR(propose_doc,
"propose(Xs, Rs, columns, parts, proposal, begin, end, min_size, strategy, seed)\n--\n\n"
"For partitions begin..end-1 of parts: choose a cut dimension, move the segment to the\n"
"other copy of Xs/Rs around its median and fill in proposal (see _mondrian_kernel.propose).\n"
"Runs without the GIL; calls on disjoint ranges of partitions may run concurrently.");

static PyObject *py_propose(PyObject *self, PyObject *args)
{
    PyObject *xs_obj, *rs_obj, *columns, *parts_obj, *proposal;
    Py_ssize_t begin, end, min_size;
    int strategy;
    long long seed;
    if (!PyArg_ParseTuple(args, "OOOOOnnniL:propose", &xs_obj, &rs_obj, &columns, &parts_obj,
                          &proposal, &begin, &end, &min_size, &strategy, &seed))
        return NULL;
    if (strategy < WIDEST || strategy > RANDOM)
        return PyErr_Format(PyExc_ValueError, "propose: unknown strategy %d", strategy);
    if (min_size < 1)
        return PyErr_Format(PyExc_ValueError, "propose: min_size must be >= 1, got %zd",
                            min_size);

    Arrays arrays = {.function = "propose"};
    Round r = {.min_size = min_size, .strategy = strategy, .seed = (uint64_t)seed};
    Py_ssize_t n_parts;
    Py_buffer *xs = take_codes(&arrays, xs_obj, "Xs", 3, (Py_ssize_t[]){2, -1, -1});
    if (xs == NULL)
        goto fail;
    r.Xs = xs->buf;
    r.n = xs->shape[1];
    r.d = xs->shape[2];
    Py_buffer *rs = take(&arrays, rs_obj, "Rs", 'i', 8, 1, 2, (Py_ssize_t[]){2, r.n});
    if (rs == NULL || take_columns(&arrays, columns, r.d, &r.col) < 0
        || take_parts(&arrays, parts_obj, r.d, 0, &r.parts, &n_parts) < 0
        || take_proposal(&arrays, proposal, n_parts, r.d, 1, &r.out) < 0)
        goto fail;
    r.Rs = rs->buf;
    if (begin < 0 || begin > end || end > n_parts) {
        PyErr_Format(PyExc_ValueError, "propose: partitions [%zd, %zd) out of [0, %zd)",
                     begin, end, n_parts);
        goto fail;
    }
    for (Py_ssize_t p = begin; p < end; p++) {
        int64_t s = r.parts.starts[p], e = r.parts.ends[p];
        if (s < 0 || s >= e || e > r.n || (r.parts.side[p] != 0 && r.parts.side[p] != 1)) {
            PyErr_Format(PyExc_ValueError,
                         "propose: partition %zd is [%lld, %lld) on side %d; expected a "
                         "non-empty segment of [0, %lld) on side 0 or 1", p, (long long)s,
                         (long long)e, (int)r.parts.side[p], (long long)r.n);
            goto fail;
        }
    }

    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = xs->itemsize == 2 ? propose_chunk_int16(&r, begin, end)
                               : propose_chunk_int32(&r, begin, end);
    Py_END_ALLOW_THREADS
    release_all(&arrays);
    if (failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;

fail:
    release_all(&arrays);
    return NULL;
}

PyDoc_STRVAR(first_round_doc,
"first_round(X, lo, hi, bits)\n--\n\n"
"The code ranges of the whole table X (n, d) into lo, hi and bits, each (1, d).");

static PyObject *py_first_round(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *lo_obj, *hi_obj, *bits_obj;
    if (!PyArg_ParseTuple(args, "OOOO:first_round", &x_obj, &lo_obj, &hi_obj, &bits_obj))
        return NULL;
    Arrays arrays = {.function = "first_round"};
    Py_buffer *x = take_codes(&arrays, x_obj, "X", 2, (Py_ssize_t[]){-1, -1});
    const Py_ssize_t row[2] = {1, x ? x->shape[1] : 0};
    Py_buffer *lo = x ? take(&arrays, lo_obj, "lo", 'i', 8, 1, 2, row) : NULL;
    Py_buffer *hi = lo ? take(&arrays, hi_obj, "hi", 'i', 8, 1, 2, row) : NULL;
    Py_buffer *bits = hi ? take(&arrays, bits_obj, "bits", 'u', 8, 1, 2, row) : NULL;
    if (bits == NULL) {
        release_all(&arrays);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (x->itemsize == 2)
        first_round_int16(x->buf, x->shape[0], x->shape[1], lo->buf, hi->buf, bits->buf);
    else
        first_round_int32(x->buf, x->shape[0], x->shape[1], lo->buf, hi->buf, bits->buf);
    Py_END_ALLOW_THREADS
    release_all(&arrays);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(advance_doc,
"advance(parts, proposal, cut, take_lt, keep_trying, min_size, remove_cut_dimension,\n"
"        single_dimensional, done, n_done, next) -> (n_next, n_done)\n--\n\n"
"Fill next (a parts tuple with room for 2 * n_parts) with the next round's partitions\n"
"and done from n_done on with the final ones (see _mondrian_kernel.advance).");

static PyObject *py_advance(PyObject *self, PyObject *args)
{
    PyObject *parts_obj, *proposal, *cut_obj, *take_lt_obj, *keep_obj, *done_obj, *next_obj;
    Py_ssize_t min_size, n_done;
    int remove_cut_dimension, single_dimensional;
    if (!PyArg_ParseTuple(args, "OOOOOnppOnO:advance", &parts_obj, &proposal, &cut_obj,
                          &take_lt_obj, &keep_obj, &min_size, &remove_cut_dimension,
                          &single_dimensional, &done_obj, &n_done, &next_obj))
        return NULL;
    Arrays arrays = {.function = "advance"};
    Parts parts, next;
    Proposal prop;
    Py_ssize_t n_parts, cap;
    PyObject **done_items;
    /* the number of dimensions, from the partitions' ranges */
    PyObject **items = tuple_items(&arrays, parts_obj, "parts", 8);
    Py_buffer *lo = items ? take(&arrays, items[5], "lo", 'i', 8, 0, 2, (Py_ssize_t[]){-1, -1})
                          : NULL;
    if (lo == NULL)
        goto fail;
    Py_ssize_t d = lo->shape[1];
    if (take_parts(&arrays, parts_obj, d, 0, &parts, &n_parts) < 0
        || take_proposal(&arrays, proposal, n_parts, d, 0, &prop) < 0
        || take_parts(&arrays, next_obj, d, 1, &next, &cap) < 0)
        goto fail;
    const Py_ssize_t vec[1] = {n_parts};
    Py_buffer *cut = take(&arrays, cut_obj, "cut", 'i', 8, 0, 1, vec);
    Py_buffer *take_lt = cut ? take(&arrays, take_lt_obj, "take_lt", 'b', 1, 0, 1, vec) : NULL;
    Py_buffer *keep = take_lt ? take(&arrays, keep_obj, "keep_trying", 'b', 1, 0, 1, vec)
                              : NULL;
    if (keep == NULL || (done_items = tuple_items(&arrays, done_obj, "done", 3)) == NULL)
        goto fail;
    Py_buffer *done_starts = take(&arrays, done_items[0], "done starts", 'i', 8, 1, 1,
                                  (Py_ssize_t[]){-1});
    if (done_starts == NULL)
        goto fail;
    const Py_ssize_t room[1] = {done_starts->shape[0]};
    Py_buffer *done_ends = take(&arrays, done_items[1], "done ends", 'i', 8, 1, 1, room);
    Py_buffer *done_side = done_ends ? take(&arrays, done_items[2], "done side", 'i', 1, 1, 1,
                                            room) : NULL;
    if (done_side == NULL)
        goto fail;
    if (cap < 2 * n_parts) {
        PyErr_Format(PyExc_ValueError, "advance: next has room for %zd partitions, "
                     "needs %zd", cap, 2 * n_parts);
        goto fail;
    }
    if (n_done < 0 || n_done > room[0]) {
        PyErr_Format(PyExc_ValueError, "advance: n_done %zd out of [0, %zd]", n_done,
                     room[0]);
        goto fail;
    }
    int64_t n_next = advance_round(&parts, &prop, cut->buf, take_lt->buf, keep->buf, n_parts,
                                   d, min_size, remove_cut_dimension, single_dimensional,
                                   done_starts->buf, done_ends->buf, done_side->buf, room[0],
                                   &n_done, &next);
    if (n_next < 0) {
        PyErr_Format(PyExc_ValueError, "advance: done has room for only %zd segments",
                     room[0]);
        goto fail;
    }
    release_all(&arrays);
    return Py_BuildValue("nn", (Py_ssize_t)n_next, n_done);

fail:
    release_all(&arrays);
    return NULL;
}

static PyMethodDef methods[] = {
    {"propose", py_propose, METH_VARARGS, propose_doc},
    {"first_round", py_first_round, METH_VARARGS, first_round_doc},
    {"advance", py_advance, METH_VARARGS, advance_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "anonkit.algorithms._mondrian_c",
    .m_doc = "Compiled inner loop of Mondrian; see anonkit.algorithms._mondrian_kernel.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__mondrian_c(void)
{
    return PyModule_Create(&module);
}

#else /* CODE_T is defined: the kernel for one code type -------------------------------- */

/* Counts of the codes of column j in rows [s, e) into counts[: hi - lo + 1] (counts[c]
 * for code lo + c); returns the number of slots used. */
static int64_t KERNEL(histogram)(const CODE_T *X, int64_t d, int64_t s, int64_t e, int64_t j,
                                 int64_t lo, int64_t hi, int64_t *counts)
{
    int64_t width = hi - lo + 1;
    memset(counts, 0, (size_t)width * sizeof *counts);
    for (int64_t i = s; i < e; i++)
        counts[X[i * d + j] - lo]++;
    return width;
}

/* The codes of column j in rows [s, e), sorted, in values[: e - s]. */
static int64_t *KERNEL(sorted_column)(const CODE_T *X, int64_t d, int64_t s, int64_t e,
                                      int64_t j, int64_t *values)
{
    for (int64_t i = s; i < e; i++)
        values[i - s] = X[i * d + j];
    sort_codes(values, e - s);
    return values;
}

/* Entropy or (strategy DISTINCT) share of distinct values of column j in rows [s, e): by
 * counting when the codes span at most twice the rows, by sorting otherwise, so the work
 * is never proportional to the column's number of distinct values. */
static double KERNEL(score)(const CODE_T *X, const Round *r, int64_t s, int64_t e, int64_t j,
                            int64_t lo, int64_t hi, int64_t *counts, int64_t *values)
{
    int64_t size = e - s, distinct = 0;
    double h = 0.0;
    if (hi - lo + 1 <= 2 * size) {
        int64_t width = KERNEL(histogram)(X, r->d, s, e, j, lo, hi, counts);
        for (int64_t c = 0; c < width; c++) {
            if (counts[c] > 0) {
                distinct++;
                double q = (double)counts[c] / (double)size;
                h -= q * log(q);
            }
        }
    } else {
        const int64_t *ordered = KERNEL(sorted_column)(X, r->d, s, e, j, values);
        int64_t run = 1;
        for (int64_t i = 1; i <= size; i++) {
            if (i == size || ordered[i] != ordered[i - 1]) {
                distinct++;
                double q = (double)run / (double)size;
                h -= q * log(q);
                run = 1;
            } else {
                run++;
            }
        }
    }
    return r->strategy == DISTINCT ? (double)distinct / (double)r->col.cardinalities[j] : h;
}

/* The code ranges of rows [s, e) (2147483647 and -1 when there are none) and the set of
 * codes of each small unordered column (all its codes are below 64). A pass of its own
 * after the rows are moved, over blocks of rows that stay in the L1 cache: the minimum
 * and maximum of a block are taken across a whole row at a time, which vectorizes, and
 * the variable shifts of the sets are kept out of that loop. */
static void KERNEL(part_ranges)(const CODE_T *X, int64_t d, int64_t s, int64_t e,
                                const uint8_t *unordered, int64_t *lo, int64_t *hi,
                                uint64_t *bits)
{
    enum { BLOCK_ROWS = 256 };
    CODE_T min[MAX_DIMS], max[MAX_DIMS];
    for (int64_t j = 0; j < d; j++) {
        lo[j] = 2147483647;
        hi[j] = -1;
        bits[j] = 0;
    }
    if (s == e)
        return;
    for (int64_t j = 0; j < d; j++)
        min[j] = max[j] = X[s * d + j];
    for (int64_t block = s; block < e; block += BLOCK_ROWS) {
        const int64_t end = block + BLOCK_ROWS < e ? block + BLOCK_ROWS : e;
        for (int64_t i = block; i < end; i++) {
            for (int64_t j = 0; j < d; j++) {
                const CODE_T x = X[i * d + j];
                min[j] = x < min[j] ? x : min[j];
                max[j] = x > max[j] ? x : max[j];
            }
        }
        for (int64_t j = 0; j < d; j++) {
            if (!unordered[j])
                continue;
            uint64_t set = 0;
            for (int64_t i = block; i < end; i++)
                set |= (uint64_t)1 << X[i * d + j];
            bits[j] |= set;
        }
    }
    for (int64_t j = 0; j < d; j++) {
        lo[j] = min[j];
        hi[j] = max[j];
    }
}

/* Partition p: try dimensions best first (skipping those excluded or tried) until one has
 * a median cut whose sides both reach min_size, then move the segment to the other copy
 * around that median. values (>= size) and counts (>= 2 * size + 1) are scratch. */
static void KERNEL(propose_one)(const Round *r, int64_t p, int64_t *values, int64_t *counts)
{
    const Columns *col = &r->col;
    const Parts *parts = &r->parts;
    const int64_t d = r->d, s = parts->starts[p], e = parts->ends[p], size = e - s;
    const int64_t *lo = parts->lo + p * d, *hi = parts->hi + p * d;
    const int side = parts->side[p];
    const CODE_T *X = (const CODE_T *)r->Xs + side * r->n * d;
    const uint64_t skip = (uint64_t)(parts->excluded[p] | parts->tried[p]);
    double score[MAX_DIMS];

    uint64_t rng_state = r->seed * LCG_MUL + (uint64_t)p;
    for (int64_t j = 0; j < d; j++) {
        score[j] = -1.0;
        if ((skip >> j) & 1 || lo[j] == hi[j])
            continue;
        if (r->strategy == WIDEST && col->tree[j]) {
            /* a column with a hierarchy is as wide as its partition's common ancestor */
            int64_t h = col->tree_height[j], off = col->tree_off[j];
            int64_t level = tree_level(col->tree_nodes, off, h, lo[j], hi[j]);
            double under = col->tree_under[off + lo[j] * h + level];
            double leaves = col->tree_under[off + lo[j] * h + h - 1];
            score[j] = leaves > 1 ? (under - 1.0) / (leaves - 1.0) : 0.0;
        } else if (r->strategy == WIDEST && col->unordered[j]) {
            /* an unordered column is as wide as the values it holds, not its code span */
            score[j] = (double)(popcount64(parts->bits[p * d + j]) - 1)
                       / (double)(col->cardinalities[j] - 1);
        } else if (r->strategy == WIDEST) {
            int64_t off = col->mag_offsets[j];
            double width = col->mags[off + hi[j]] - col->mags[off + lo[j]];
            if (isnan(width))  /* the missing code is in range */
                width = col->spans[j];
            score[j] = col->spans[j] > 0 ? width / col->spans[j] : 0.0;
        } else if (r->strategy == RANDOM) {
            rng_state = rng_state * LCG_MUL + LCG_ADD;
            score[j] = (double)(rng_state >> 11) / 9007199254740992.0;  /* [0, 1), 53 bits */
        } else {
            score[j] = KERNEL(score)(X, r, s, e, j, lo[j], hi[j], counts, values);
        }
    }

    r->out.dim[p] = -1;
    r->out.cut_le[p] = e;
    r->out.cut_lt[p] = s;
    int64_t best, m, n_lt, n_eq;
    int aligned;
    for (;;) {
        best = -1;
        double best_score = -1.0;
        for (int64_t j = 0; j < d; j++) {
            if (score[j] > best_score) {
                best_score = score[j];
                best = j;
            }
        }
        if (best < 0)
            return;
        score[best] = -1.0;  /* not again for this partition in this call */

        /* the lower median of the chosen dimension and the sizes of < m and == m; for a
         * column with a hierarchy, rather the boundary between two subtrees of the
         * partition's common ancestor nearest the median, so both halves generalize lower */
        const int64_t blo = lo[best], bhi = hi[best], target = (size - 1) / 2;
        int64_t h = 1, off = 0, child_level = -1;
        aligned = 0;
        if (col->tree[best]) {
            h = col->tree_height[best];
            off = col->tree_off[best];
            child_level = tree_level(col->tree_nodes, off, h, blo, bhi) - 1;
        }
        if (bhi - blo + 1 <= 2 * size) {
            int64_t width = KERNEL(histogram)(X, d, s, e, best, blo, bhi, counts);
            int64_t acc = 0;
            m = blo;
            for (int64_t c = 0; c < width; c++) {
                acc += counts[c];
                if (acc > target) {
                    m = blo + c;
                    break;
                }
            }
            n_eq = counts[m - blo];
            n_lt = acc - n_eq;
            if (col->tree[best] && child_level >= 0) {
                /* the codes present and their counts, compacted to the front */
                int64_t present = 0;
                for (int64_t c = 0; c < width; c++) {
                    if (counts[c] > 0) {
                        values[present] = blo + c;
                        counts[present] = counts[c];
                        present++;
                    }
                }
                int64_t at = tree_cut(col->tree_nodes, off, h, child_level, values, counts,
                                      present, size, r->min_size);
                if (at >= 0) {
                    aligned = 1;
                    m = values[at];
                    n_eq = counts[at];
                    n_lt = 0;
                    for (int64_t i = 0; i < at; i++)
                        n_lt += counts[i];
                }
            }
        } else {
            const int64_t *ordered = KERNEL(sorted_column)(X, d, s, e, best, values);
            m = ordered[target];
            n_lt = search_sorted(ordered, size, m, 0);
            n_eq = search_sorted(ordered, size, m, 1) - n_lt;
            if (col->tree[best] && child_level >= 0) {
                /* distinct codes and their counts: counts at the front of counts, codes
                 * in its back half (values holds the sorted column) */
                int64_t *codes = counts + size, present = 0;
                for (int64_t i = 0; i < size; i++) {
                    if (i == 0 || ordered[i] != ordered[i - 1]) {
                        codes[present] = ordered[i];
                        counts[present] = 0;
                        present++;
                    }
                    counts[present - 1]++;
                }
                int64_t at = tree_cut(col->tree_nodes, off, h, child_level, codes, counts,
                                      present, size, r->min_size);
                if (at >= 0) {
                    aligned = 1;
                    m = codes[at];
                    n_eq = counts[at];
                    n_lt = search_sorted(ordered, size, m, 0);
                }
            }
        }
        int64_t n_gt = size - n_lt - n_eq;
        int le_ok = n_lt + n_eq >= r->min_size && n_gt >= r->min_size;
        int lt_ok = n_lt >= r->min_size && n_eq + n_gt >= r->min_size && !aligned;
        if (le_ok || lt_ok)
            break;
    }

    /* Move the segment to the other copy as < m | == m | > m. The part of a row is
     * computed, not branched on: the comparison with the median is unpredictable, and
     * mispredictions would dominate the loop. */
    CODE_T *restrict dst_x = (CODE_T *)r->Xs + (1 - side) * r->n * d;
    const int64_t *restrict src_r = r->Rs + side * r->n;
    int64_t *restrict dst_r = r->Rs + (1 - side) * r->n;
    const int64_t bounds[4] = {s, s + n_lt, s + n_lt + n_eq, e};
    int64_t write_at[3] = {bounds[0], bounds[1], bounds[2]};
    for (int64_t i = s; i < e; i++) {
        const CODE_T *row = X + i * d;
        const CODE_T v = row[best];
        const int part = (v >= m) + (v > m);
        const int64_t w = write_at[part]++;
        for (int64_t j = 0; j < d; j++)
            dst_x[w * d + j] = row[j];
        dst_r[w] = src_r[i];
    }
    for (int part = 0; part < 3; part++)
        KERNEL(part_ranges)(dst_x, d, bounds[part], bounds[part + 1], col->unordered,
                            r->out.part_lo + (p * 3 + part) * d,
                            r->out.part_hi + (p * 3 + part) * d,
                            r->out.part_bits + (p * 3 + part) * d);
    parts->side[p] = (int8_t)(1 - side);
    r->out.dim[p] = best;
    r->out.cut_le[p] = s + n_lt + n_eq;
    /* an aligned cut is x <= m only: x < m would split a subtree again */
    r->out.cut_lt[p] = aligned ? s + n_lt + n_eq : s + n_lt;
}

/* Partitions [begin, end) with scratch sized for the largest of them; -1: out of memory. */
static int KERNEL(propose_chunk)(const Round *r, int64_t begin, int64_t end)
{
    int64_t largest = 1;
    for (int64_t p = begin; p < end; p++) {
        int64_t size = r->parts.ends[p] - r->parts.starts[p];
        largest = size > largest ? size : largest;
    }
    int64_t *values = malloc((size_t)largest * sizeof *values);
    int64_t *counts = malloc((size_t)(2 * largest + 1) * sizeof *counts);
    if (values == NULL || counts == NULL) {
        free(values);
        free(counts);
        return -1;
    }
    for (int64_t p = begin; p < end; p++)
        KERNEL(propose_one)(r, p, values, counts);
    free(values);
    free(counts);
    return 0;
}

/* The ranges of the whole table; bits for every code below 64. */
static void KERNEL(first_round)(const CODE_T *X, int64_t n, int64_t d, int64_t *lo,
                                int64_t *hi, uint64_t *bits)
{
    for (int64_t j = 0; j < d; j++) {
        lo[j] = 2147483647;
        hi[j] = -1;
        bits[j] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < d; j++) {
            const CODE_T v = X[i * d + j];
            lo[j] = v < lo[j] ? v : lo[j];
            hi[j] = v > hi[j] ? v : hi[j];
            bits[j] |= (uint64_t)(v >= 0 && v < 64) << (v & 63);
        }
    }
}

#endif /* CODE_T */
