/*
 * Compiled loops of the accumulated knowledge (anonkit/history/knowledge.py): the qi
 * adversary's constraint propagation, and the lookup of atom entries in the releases'
 * multisets. Python keeps the data; these only walk it.
 *
 * propagate(low, high, atom, atom_size, link_start, link_g, count, need, s_low, s_high,
 *           max_rounds) -> (rounds, contradiction)
 *   Live entry e (float64 bounds low[e] <= high[e] on how many people of atom[e] have its
 *   value) is linked to the multiset entries link_g[link_start[e] : link_start[e + 1]];
 *   multiset entry g holds count[g] rows, need[g] of them records, and s_low[g] / s_high[g]
 *   are the sums of the bounds of every atom entry linked to it (live or not). Each round
 *   computes, from the bounds as they are, every live entry's new bounds from each of its
 *   multiset sums and then from its atom's sum, then applies them all and updates the sums
 *   (Jacobi rounds: the same arithmetic as the numpy version it replaced, which the tests
 *   keep as the reference). An entry whose bounds meet is left alone from then on. Stops
 *   when a round changes nothing, after max_rounds, or when some entry's bounds cross
 *   (contradictory releases: the caller restores the bounds it had). Updates low, high,
 *   s_low and s_high in place.
 *
 * locate(key, release_start, class_start, class_base, q_release, q_class, q_value, out)
 *   Multiset entries are sorted by (class, value) within each release; key[g] is
 *   class << 31 | value; release r's entries are key[release_start[r] : release_start[r+1]]
 *   and its class c's are from release_start[r] + class_start[class_base[r] + c] to the
 *   next class's start. Writes the global position of each query (release, class, value),
 *   -1 when absent: a scan of one class's few entries instead of a binary search of all.
 *
 * components(record, klass, out) -> n_components
 *   Memberships sorted by record: record[i] was in global class klass[i]. Classes that
 *   share a record are joined (union-find, path halving); writes each class's component,
 *   numbered 0.. in order of its smallest class, and returns how many there are.
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers). The GIL is
 * released for the loops.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int run_propagate(int64_t n, double *low, double *high, const int64_t *atom,
                         int64_t n_atoms, const double *atom_size, const int64_t *link_start,
                         const int64_t *link_g, const double *count, const double *need,
                         double *s_low, double *s_high, int64_t max_rounds, int64_t *rounds,
                         int *contradiction) {
    double *lo2 = malloc((size_t)(n ? n : 1) * sizeof(double));
    double *hi2 = malloc((size_t)(n ? n : 1) * sizeof(double));
    double *a_low = malloc((size_t)(n_atoms ? n_atoms : 1) * sizeof(double));
    double *a_high = malloc((size_t)(n_atoms ? n_atoms : 1) * sizeof(double));
    unsigned char *fixed = calloc((size_t)(n ? n : 1), 1);
    if (!lo2 || !hi2 || !a_low || !a_high || !fixed) {
        free(lo2); free(hi2); free(a_low); free(a_high); free(fixed);
        return -1;
    }
    *rounds = 0;
    *contradiction = 0;
    for (int64_t round = 1; round <= max_rounds; round++) {
        *rounds = round;
        for (int64_t e = 0; e < n; e++) {
            double lo = low[e], hi = high[e];
            if (!fixed[e]) {
                for (int64_t l = link_start[e]; l < link_start[e + 1]; l++) {
                    int64_t g = link_g[l];
                    double cap = count[g] - (s_low[g] - low[e]);
                    double floor_ = need[g] - (s_high[g] - high[e]);
                    if (cap < hi) hi = cap;
                    if (floor_ > lo) lo = floor_;
                }
            }
            lo2[e] = lo;
            hi2[e] = hi;
        }
        memset(a_low, 0, (size_t)n_atoms * sizeof(double));
        memset(a_high, 0, (size_t)n_atoms * sizeof(double));
        for (int64_t e = 0; e < n; e++) {
            a_low[atom[e]] += lo2[e];
            a_high[atom[e]] += hi2[e];
        }
        int changed = 0;
        for (int64_t e = 0; e < n; e++) {
            if (fixed[e]) continue;
            double room = atom_size[atom[e]];
            double hi3 = hi2[e], lo3 = lo2[e];
            double by_low = room - (a_low[atom[e]] - lo2[e]);
            double by_high = room - (a_high[atom[e]] - hi2[e]);
            if (by_low < hi3) hi3 = by_low;
            if (by_high > lo3) lo3 = by_high;
            if (lo3 > hi3) {
                *contradiction = 1;
                break;
            }
            lo2[e] = lo3;
            hi2[e] = hi3;
        }
        if (*contradiction) break;
        for (int64_t e = 0; e < n; e++) {
            if (fixed[e]) continue;
            double d_low = lo2[e] - low[e], d_high = hi2[e] - high[e];
            if (d_low == 0.0 && d_high == 0.0) continue;
            changed = 1;
            for (int64_t l = link_start[e]; l < link_start[e + 1]; l++) {
                s_low[link_g[l]] += d_low;
                s_high[link_g[l]] += d_high;
            }
            low[e] = lo2[e];
            high[e] = hi2[e];
        }
        if (!changed) break;
        for (int64_t e = 0; e < n; e++)
            if (low[e] == high[e]) fixed[e] = 1;
    }
    free(lo2); free(hi2); free(a_low); free(a_high); free(fixed);
    return 0;
}

static PyObject *c_propagate(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer lo, hi, at, size, ls, lg, cnt, nd, sl, sh;
    long long max_rounds;
    if (!PyArg_ParseTuple(args, "w*w*y*y*y*y*y*y*w*w*L", &lo, &hi, &at, &size, &ls, &lg,
                          &cnt, &nd, &sl, &sh, &max_rounds))
        return NULL;
    int64_t n = lo.len / (Py_ssize_t)sizeof(double);
    int64_t n_atoms = size.len / (Py_ssize_t)sizeof(double);
    int64_t n_links = lg.len / (Py_ssize_t)sizeof(int64_t);
    int64_t n_keys = cnt.len / (Py_ssize_t)sizeof(double);
    int status = 0, contradiction = 0;
    int64_t rounds = 0;
    int bad = hi.len != lo.len || at.len != n * (Py_ssize_t)sizeof(int64_t)
              || ls.len != (n + 1) * (Py_ssize_t)sizeof(int64_t) || nd.len != cnt.len
              || sl.len != cnt.len || sh.len != cnt.len;
    if (!bad) {
        const int64_t *a = at.buf, *s = ls.buf, *g = lg.buf;
        for (int64_t e = 0; e < n && !bad; e++)
            bad = a[e] < 0 || a[e] >= n_atoms || s[e] > s[e + 1];
        bad = bad || (n && (s[0] < 0 || s[n] > n_links));
        for (int64_t l = 0; l < n_links && !bad; l++) bad = g[l] < 0 || g[l] >= n_keys;
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "propagate: inconsistent arrays");
        status = -2;
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = run_propagate(n, lo.buf, hi.buf, at.buf, n_atoms, size.buf, ls.buf, lg.buf,
                               cnt.buf, nd.buf, sl.buf, sh.buf, (int64_t)max_rounds, &rounds,
                               &contradiction);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&lo); PyBuffer_Release(&hi); PyBuffer_Release(&at);
    PyBuffer_Release(&size); PyBuffer_Release(&ls); PyBuffer_Release(&lg);
    PyBuffer_Release(&cnt); PyBuffer_Release(&nd); PyBuffer_Release(&sl);
    PyBuffer_Release(&sh);
    if (status == -1) return PyErr_NoMemory();
    if (status == -2) return NULL;
    return Py_BuildValue("(Li)", (long long)rounds, contradiction);
}

static PyObject *c_locate(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer kb, rsb, csb, cbb, qrb, qcb, qvb, ob;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*", &kb, &rsb, &csb, &cbb, &qrb, &qcb, &qvb,
                          &ob))
        return NULL;
    const int64_t *key = kb.buf, *rs = rsb.buf, *cs = csb.buf, *cb = cbb.buf;
    const int64_t *qr = qrb.buf, *qc = qcb.buf, *qv = qvb.buf;
    int64_t *out = ob.buf;
    int64_t n_q = qrb.len / (Py_ssize_t)sizeof(int64_t);
    int64_t n_rel = rsb.len / (Py_ssize_t)sizeof(int64_t) - 1;
    int64_t n_cs = csb.len / (Py_ssize_t)sizeof(int64_t);
    int64_t n_key = kb.len / (Py_ssize_t)sizeof(int64_t);
    int bad = qcb.len != qrb.len || qvb.len != qrb.len || ob.len != qrb.len
              || cbb.len != (n_rel + 1) * (Py_ssize_t)sizeof(int64_t);
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (int64_t i = 0; i < n_q && !bad; i++) {
            int64_t r = qr[i], c = qc[i];
            out[i] = -1;
            /* release r has cb[r + 1] - cb[r] - 1 classes */
            if (r < 0 || r >= n_rel || c < 0 || c >= cb[r + 1] - cb[r] - 1
                || cb[r + 1] > n_cs) {
                bad = 1;
                break;
            }
            int64_t from = rs[r] + cs[cb[r] + c], to = rs[r] + cs[cb[r] + c + 1];
            if (from < 0 || to > n_key) { bad = 1; break; }
            int64_t want = (c << 31) | qv[i];
            for (int64_t g = from; g < to; g++) {
                if (key[g] == want) { out[i] = g; break; }
                if (key[g] > want) break;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&kb); PyBuffer_Release(&rsb); PyBuffer_Release(&csb);
    PyBuffer_Release(&cbb); PyBuffer_Release(&qrb); PyBuffer_Release(&qcb);
    PyBuffer_Release(&qvb); PyBuffer_Release(&ob);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "locate: a query outside the multisets");
        return NULL;
    }
    Py_RETURN_NONE;
}

static int64_t find_root(int64_t *parent, int64_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static PyObject *c_components(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rb, kb, ob;
    if (!PyArg_ParseTuple(args, "y*y*w*", &rb, &kb, &ob)) return NULL;
    const int64_t *rec = rb.buf, *cls = kb.buf;
    int64_t *out = ob.buf;
    int64_t n = rb.len / (Py_ssize_t)sizeof(int64_t);
    int64_t n_classes = ob.len / (Py_ssize_t)sizeof(int64_t);
    int bad = kb.len != rb.len;
    int64_t n_components = 0;
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (int64_t c = 0; c < n_classes; c++) out[c] = c;  /* out holds the parents */
        for (int64_t i = 0; i < n && !bad; i++) {
            if (cls[i] < 0 || cls[i] >= n_classes) { bad = 1; break; }
            if (i == 0 || rec[i] != rec[i - 1]) continue;
            int64_t a = find_root(out, cls[i - 1]), b = find_root(out, cls[i]);
            if (a != b) {
                if (a < b) out[b] = a; else out[a] = b;  /* the smaller class is the root */
            }
        }
        if (!bad) {
            /* every class points at its root (a class before it points at its root
               already, so the walks stay valid) */
            for (int64_t c = 0; c < n_classes; c++) out[c] = find_root(out, c);
            /* a root is its smallest class, so it comes before its members: number the
               roots in order (as -number - 1), then every class takes its root's */
            for (int64_t c = 0; c < n_classes; c++) {
                int64_t r = out[c];
                out[c] = r == c ? -(++n_components) : out[r];
            }
            for (int64_t c = 0; c < n_classes; c++) out[c] = -out[c] - 1;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&rb); PyBuffer_Release(&kb); PyBuffer_Release(&ob);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "components: a class outside the classes");
        return NULL;
    }
    return PyLong_FromLongLong((long long)n_components);
}

static PyMethodDef methods[] = {
    {"components", c_components, METH_VARARGS,
     "Components of the classes joined by shared records (union-find)."},
    {"propagate", c_propagate, METH_VARARGS,
     "The qi adversary's constraint propagation over live atom entries."},
    {"locate", c_locate, METH_VARARGS,
     "Global positions of (release, class, value) in the releases' multisets."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_knowledge_c", NULL, -1, methods};

PyMODINIT_FUNC PyInit__knowledge_c(void) { return PyModule_Create(&module); }
