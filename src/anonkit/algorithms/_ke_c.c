/*
 * Compiled kernel of the optimal (k,e) partition (see ke.py for the Python side).
 *
 * argsort(): a stable LSD radix sort of float64 keys (11-bit digits over the keys' order-
 *   preserving 64-bit images), carrying the row positions; digits equal in every key are
 *   skipped, so a column of salaries costs three or four passes. A comparison sort of 10^6
 *   values alone takes longer than the whole partition budget.
 * Exact integers: when the values have known decimal places and value * 10^places is an
 *   exact integer for every value (checked on the Python side, never approximated), both
 *   functions take those integers too: the sort's keys then span few bits (fewer passes),
 *   and the range test is an integer compare instead of a rounding and a division.
 * partition(): the O(n) dynamic programme over the sorted values. For a group ending at
 *   i - 1 the valid starts form a prefix [0, J(i)] (moving a start left only adds values and
 *   widens the range), so f[i] = v[i-1] + min over allowed j <= J(i) of (f[j] - v[j]), a
 *   running prefix minimum. J(i) comes from two pointers that only move right: one for
 *   k distinct values, one for the range e. ``allowed`` (optional) marks the boundaries a
 *   group may start or end at (the incremental release forbids cutting earlier groups).
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers): numpy allocates
 * every array and this module reads and writes their buffers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 11
#define BUCKETS (1 << DIGIT_BITS)

static inline uint64_t order_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    /* negative numbers: flip all bits; positive: flip the sign bit (-0.0 sorts before 0.0,
       which is harmless: equal values are grouped by value, not by bits) */
    return (u & 0x8000000000000000ULL) ? ~u : (u | 0x8000000000000000ULL);
}

/* argsort(values_f64, out_i64[, ints_i64]): with ``ints`` (the values as exact integers,
   e.g. cents), the keys are ``ints - min(ints)``: a column of prices spans few bits, so
   fewer digits vary and fewer passes run than over the floats' bit images. */
static PyObject *ke_argsort(PyObject *self, PyObject *args) {
    Py_buffer vb, ob, ib, sb;
    PyObject *ints_obj = Py_None, *sorted_obj = Py_None;
    if (!PyArg_ParseTuple(args, "y*w*|OO", &vb, &ob, &ints_obj, &sorted_obj)) return NULL;
    Py_ssize_t n = vb.len / (Py_ssize_t)sizeof(double);
    const int64_t *ints = NULL;
    if (ints_obj != Py_None) {
        if (PyObject_GetBuffer(ints_obj, &ib, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&vb); PyBuffer_Release(&ob);
            return NULL;
        }
        ints = (const int64_t *)ib.buf;
        if (ib.len / (Py_ssize_t)sizeof(int64_t) != n || sorted_obj == Py_None ||
            PyObject_GetBuffer(sorted_obj, &sb, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&vb); PyBuffer_Release(&ob); PyBuffer_Release(&ib);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "argsort: integer keys need n entries "
                                "and an output for them sorted");
            return NULL;
        }
        if (sb.len != ib.len) {
            PyBuffer_Release(&vb); PyBuffer_Release(&ob); PyBuffer_Release(&ib);
            PyBuffer_Release(&sb);
            PyErr_SetString(PyExc_ValueError, "argsort: sorted integer output differs");
            return NULL;
        }
    }
    int64_t lo = 0;
    if (ob.len / (Py_ssize_t)sizeof(int64_t) != n) {
        PyBuffer_Release(&vb); PyBuffer_Release(&ob);
        if (ints) { PyBuffer_Release(&ib); PyBuffer_Release(&sb); }
        PyErr_SetString(PyExc_ValueError, "argsort: output length differs from input");
        return NULL;
    }
    const double *v = (const double *)vb.buf;
    int64_t *out = (int64_t *)ob.buf;
    uint64_t *keys = NULL, *keys2 = NULL;
    int64_t *idx2 = NULL;
    size_t *count = NULL;
    int ok = 0;
    Py_BEGIN_ALLOW_THREADS
    keys = malloc((size_t)n * sizeof *keys + 1);
    keys2 = malloc((size_t)n * sizeof *keys2 + 1);
    idx2 = malloc((size_t)n * sizeof *idx2 + 1);
    count = malloc(BUCKETS * sizeof *count);
    if (keys && keys2 && idx2 && count) {
        ok = 1;
        uint64_t all_and = ~0ULL, all_or = 0;
        if (ints) {
            lo = n ? ints[0] : 0;
            for (Py_ssize_t i = 1; i < n; i++) if (ints[i] < lo) lo = ints[i];
            for (Py_ssize_t i = 0; i < n; i++) {
                keys[i] = (uint64_t)ints[i] - (uint64_t)lo; /* order-preserving: no wrap */
                out[i] = i;
                all_and &= keys[i];
                all_or |= keys[i];
            }
        } else {
            for (Py_ssize_t i = 0; i < n; i++) {
                keys[i] = order_bits(v[i]);
                out[i] = i;
                all_and &= keys[i];
                all_or |= keys[i];
            }
        }
        uint64_t varying = all_and ^ all_or; /* bits that differ between some keys */
        uint64_t *ka = keys, *kb = keys2;
        int64_t *ia = out, *ib = idx2;
        for (int shift = 0; shift < 64; shift += DIGIT_BITS) {
            uint64_t mask = (uint64_t)(BUCKETS - 1);
            if (((varying >> shift) & mask) == 0) continue;
            memset(count, 0, BUCKETS * sizeof *count);
            for (Py_ssize_t i = 0; i < n; i++) count[(ka[i] >> shift) & mask]++;
            size_t sum = 0;
            for (int b = 0; b < BUCKETS; b++) { size_t c = count[b]; count[b] = sum; sum += c; }
            for (Py_ssize_t i = 0; i < n; i++) {
                size_t pos = count[(ka[i] >> shift) & mask]++;
                kb[pos] = ka[i];
                ib[pos] = ia[i];
            }
            uint64_t *kt = ka; ka = kb; kb = kt;
            int64_t *it = ia; ia = ib; ib = it;
        }
        if (ia != out) memcpy(out, ia, (size_t)n * sizeof *out);
        if (ints) {
            int64_t *sorted_ints = (int64_t *)sb.buf;
            for (Py_ssize_t i = 0; i < n; i++) sorted_ints[i] = (int64_t)(ka[i] + (uint64_t)lo);
        }
    }
    free(keys); free(keys2); free(idx2); free(count);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&vb); PyBuffer_Release(&ob);
    if (ints) { PyBuffer_Release(&ib); PyBuffer_Release(&sb); }
    if (!ok) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* the range test of (k,e)-anonymity, as the model makes it: the difference rounded to the
   values' decimal places when they have some (scale = 10^places), else as it is */
static inline int wide_enough(double hi, double lo, double e, double scale) {
    double spread = hi - lo;
    if (scale > 0) spread = rint(spread * scale) / scale;
    return spread >= e;
}

/* the same test on exact integers (the values times 10^places): ``emin`` is the least
   integer difference the model accepts, so this is one subtraction and a compare */
#define WIDE(a, b) (ints ? (ints[a] - ints[b] >= emin) : wide_enough(v[a], v[b], e, scale))

/* partition(values, k, e, scale, allowed_or_None, starts_out) -> (n_groups, cost, checks)
   or (-1, inf, checks) when no partition exists. starts_out (int64, n + 1) receives the
   groups' start positions in ascending order, then n. */
static PyObject *ke_partition(PyObject *self, PyObject *args) {
    Py_buffer vb, sb, ab;
    long long k;
    double e, scale;
    PyObject *allowed_obj, *fresh_obj = Py_None, *ints_obj = Py_None;
    long long emin = 0;
    if (!PyArg_ParseTuple(args, "y*LddOw*|OOL", &vb, &k, &e, &scale, &allowed_obj, &sb,
                          &fresh_obj, &ints_obj, &emin))
        return NULL;
    Py_buffer ib;
    const int64_t *ints = NULL;
    if (ints_obj != Py_None) {
        if (PyObject_GetBuffer(ints_obj, &ib, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&vb); PyBuffer_Release(&sb);
            return NULL;
        }
        if (ib.len != vb.len) {
            PyBuffer_Release(&vb); PyBuffer_Release(&sb); PyBuffer_Release(&ib);
            PyErr_SetString(PyExc_ValueError, "partition: integer values differ in length");
            return NULL;
        }
        ints = (const int64_t *)ib.buf;
    }
    Py_buffer fb;
    const uint8_t *fresh = NULL;
    if (fresh_obj != Py_None) {
        if (PyObject_GetBuffer(fresh_obj, &fb, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&vb); PyBuffer_Release(&sb);
            if (ints) PyBuffer_Release(&ib);
            return NULL;
        }
        fresh = (const uint8_t *)fb.buf;
    }
    const uint8_t *allowed = NULL;
    int have_allowed = allowed_obj != Py_None;
    if (have_allowed && PyObject_GetBuffer(allowed_obj, &ab, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&vb); PyBuffer_Release(&sb);
        if (fresh) PyBuffer_Release(&fb);
        if (ints) PyBuffer_Release(&ib);
        return NULL;
    }
    Py_ssize_t n = vb.len / (Py_ssize_t)sizeof(double);
    if (sb.len / (Py_ssize_t)sizeof(int64_t) != n + 1 || (have_allowed && ab.len != n + 1)) {
        PyBuffer_Release(&vb); PyBuffer_Release(&sb);
        if (have_allowed) PyBuffer_Release(&ab);
        if (fresh) PyBuffer_Release(&fb);
        if (ints) PyBuffer_Release(&ib);
        PyErr_SetString(PyExc_ValueError, "partition: buffers must have n + 1 entries");
        return NULL;
    }
    if (have_allowed) allowed = (const uint8_t *)ab.buf;
    const double *v = (const double *)vb.buf;
    int64_t *starts = (int64_t *)sb.buf;
    double *f = NULL;
    int64_t *parent = NULL, *runs = NULL;
    long long n_groups = -1, checks = 0;
    double cost = INFINITY;
    int ok = 0;
    Py_BEGIN_ALLOW_THREADS
    f = malloc((size_t)(n + 1) * sizeof *f);
    parent = malloc((size_t)(n + 1) * sizeof *parent);
    runs = malloc((size_t)(n + 1) * sizeof *runs);
    /* fresh records (not in the previous release): their positions, their runs of equal
       values, and a deque for the window of starts whose group holds none of them */
    int64_t *fpos = malloc((size_t)(n + 1) * sizeof *fpos);
    int64_t *fruns = malloc((size_t)(n + 1) * sizeof *fruns);
    int64_t *deque = malloc((size_t)(n + 1) * sizeof *deque);
    if (f && parent && runs && fpos && fruns && deque && n > 0 && k >= 1) {
        ok = 1;
        f[0] = 0.0;
        /* the least f[j] - v[j] over starts j <= bp, and its earliest j: the starts asked
           for (J, or min(Jf, J)) never decrease with i, so a cursor replaces a prefix-minimum
           array (on equal cost the earliest start wins, as in the chapter's algorithm) */
        Py_ssize_t bp = 0, barg = 0;
        double bval = -v[0];
#define BEST_UPTO(P) \
        while (bp < (P)) { \
            bp++; \
            double c_ = (allowed && !allowed[bp]) ? INFINITY : f[bp] - v[bp]; \
            if (c_ < bval) { bval = c_; barg = bp; } \
        }
        Py_ssize_t n_runs = 0; /* runs[r]: start of the r-th run of equal values */
        Py_ssize_t je = -1;    /* largest start whose range to v[i-1] is >= e */
        Py_ssize_t n_fresh = 0, n_fresh_runs = 0, fe = -1, pushed = 0, d0 = 0, dn = 0;
#define key(j) ((allowed && !allowed[j]) ? INFINITY : f[j] - v[j])
        for (Py_ssize_t i = 1; i <= n; i++) {
            if (i == 1 || v[i - 1] != v[i - 2]) runs[n_runs++] = i - 1;
            while (je + 1 <= i - 1 && WIDE(i - 1, je + 1)) je++;
            Py_ssize_t jd = n_runs >= k ? runs[n_runs - k] : -1;
            Py_ssize_t J = jd < je ? jd : je;
            f[i] = INFINITY;
            parent[i] = -1;
            int may_end = !allowed || allowed[i] || i == n;
            if (!fresh) {
                if (J >= 0 && may_end) {
                    BEST_UPTO(J);
                    if (isfinite(bval)) {
                        f[i] = bval + v[i - 1];
                        parent[i] = barg;
                        checks++;
                    }
                }
            } else {
                /* the fresh records of a group are what an adversary learns by subtracting
                   the earlier groups it covers: they must meet (k,e) too, or be none */
                if (fresh[i - 1]) {
                    if (n_fresh == 0 || v[i - 1] != v[fpos[n_fresh - 1]])
                        fruns[n_fresh_runs++] = n_fresh;
                    fpos[n_fresh++] = i - 1;
                    while (fe + 1 < n_fresh &&
                           WIDE(i - 1, fpos[fe + 1])) fe++;
                }
                Py_ssize_t fd = n_fresh_runs >= k ? fruns[n_fresh_runs - k] : -1;
                Py_ssize_t t = fd < fe ? fd : fe;
                Py_ssize_t Jf = t >= 0 ? fpos[t] : -1;      /* fresh part meets (k,e) */
                Py_ssize_t last = n_fresh ? fpos[n_fresh - 1] : -1; /* no fresh: j > last */
                /* the deque holds starts j <= J with increasing f[j] - v[j] */
                while (pushed <= J) {
                    if (isfinite(key(pushed))) {
                        while (dn > d0 && key(deque[dn - 1]) > key(pushed)) dn--;
                        deque[dn++] = pushed;
                    }
                    pushed++;
                }
                while (dn > d0 && deque[d0] <= last) d0++;
                if (may_end && J >= 0) {
                    Py_ssize_t P = Jf < J ? Jf : J;
                    if (P >= 0) {
                        BEST_UPTO(P);
                        if (isfinite(bval)) {
                            f[i] = bval + v[i - 1];
                            parent[i] = barg;
                        }
                    }
                    if (dn > d0) {
                        double cand = key(deque[d0]) + v[i - 1];
                        if (cand < f[i] || (cand == f[i] && deque[d0] < parent[i])) {
                            f[i] = cand;
                            parent[i] = deque[d0];
                        }
                    }
                    checks++;
                }
            }
        }
        if (isfinite(f[n])) {
            cost = f[n];
            Py_ssize_t m = 0;
            for (Py_ssize_t i = n; i > 0; i = parent[i]) runs[m++] = parent[i];
            for (Py_ssize_t g = 0; g < m; g++) starts[g] = runs[m - 1 - g];
            starts[m] = n;
            n_groups = m;
        }
    }
#undef key
#undef BEST_UPTO
    free(f); free(parent); free(runs);
    free(fpos); free(fruns); free(deque);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&vb); PyBuffer_Release(&sb);
    if (have_allowed) PyBuffer_Release(&ab);
    if (fresh) PyBuffer_Release(&fb);
    if (ints) PyBuffer_Release(&ib);
    if (!ok && n > 0 && k >= 1) return PyErr_NoMemory();
    return Py_BuildValue("(LdL)", n_groups, cost, checks);
}

/* exact_scaled(values float64[n], scale, out int64[n]) -> bool: whether every value is
   exactly rint(value * scale) / scale with |rint(value * scale)| < 2^50, writing those
   integers to out -- numpy's rint / isfinite / max / divide / compare / astype in one pass,
   without temporaries. Stops at the first value that is not. */
static PyObject *ke_exact_scaled(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer vb, ob;
    double scale;
    if (!PyArg_ParseTuple(args, "y*dw*", &vb, &scale, &ob)) return NULL;
    Py_ssize_t n = vb.len / (Py_ssize_t)sizeof(double);
    if (ob.len != vb.len) {
        PyBuffer_Release(&vb); PyBuffer_Release(&ob);
        PyErr_SetString(PyExc_ValueError, "exact_scaled: output length differs from input");
        return NULL;
    }
    const double *v = (const double *)vb.buf;
    int64_t *out = (int64_t *)ob.buf;
    int exact = 1;
    const double limit = 1125899906842624.0; /* 2^50 */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double scaled = rint(v[i] * scale);
        if (!(fabs(scaled) < limit) || scaled / scale != v[i]) { exact = 0; break; }
        out[i] = (int64_t)scaled;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&vb); PyBuffer_Release(&ob);
    return PyBool_FromLong(exact);
}

static PyMethodDef methods[] = {
    {"argsort", ke_argsort, METH_VARARGS, "Stable radix argsort of float64 keys."},
    {"exact_scaled", ke_exact_scaled, METH_VARARGS,
     "Whether values * scale are exact integers (below 2^50); writes them."},
    {"partition", ke_partition, METH_VARARGS, "Optimal (k,e) partition of sorted values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ke_c", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ke_c(void) { return PyModule_Create(&module); }
