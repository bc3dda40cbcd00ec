/*
 * The class counting of full-domain global recoding (see global_recoding.py).
 *
 * rollup(): a frequency set (distinct code tuples of a table, with how many rows hold
 *   each) generalized to coarser levels: every column's codes pass through its map (the
 *   code at the finer level -> the code at the coarser one), and the tuples that become
 *   equal are merged, their counts added. One pass with an open-addressing hash table over
 *   the mapped tuples; groups are numbered in order of first appearance. Called on the
 *   rows themselves (identity maps, a count of one each) it groups a table.
 *
 * rollup_keyed(): the same when every mapped tuple fits one int64 key (the usual case), which
 *   is then hashed and compared alone, or, when the keys span few values, used as an index.
 *
 * suppression_cost(): what suppressing some groups of a frequency set costs under a metric
 *   that is a sum of per-cell costs; small_classes(): the same for the groups of too few rows
 *   (k-anonymity's verdict and its cost in one pass).
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers): numpy allocates
 * every array and this module reads and writes their buffers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ULL;
}

/* rollup(codes, d, counts, maps, offsets, out_codes, out_counts, group_of) -> n_groups
 *
 * codes: int32 (g, d) C order; counts: int64 (g,), or empty for a count of one per tuple;
 * maps: int32, column j's map at maps[offsets[j] + code]; out_codes: int32 (g, d);
 * out_counts: int64 (g,); group_of: int32 (g,), per input tuple its output group. */
static PyObject *c_rollup(PyObject *self, PyObject *args) {
    Py_buffer cb, nb, mb, ob, outb, outn, gb;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*w*w*w*", &cb, &d, &nb, &mb, &ob, &outb, &outn, &gb))
        return NULL;
    const int32_t *codes = cb.buf, *maps = mb.buf;
    const int64_t *counts = nb.buf, *offsets = ob.buf;
    int32_t *out_codes = outb.buf, *group_of = gb.buf;
    int64_t *out_counts = outn.buf;
    Py_ssize_t g = d > 0 ? cb.len / ((Py_ssize_t)sizeof(int32_t) * d)
                         : gb.len / (Py_ssize_t)sizeof(int32_t);
    int have_counts = nb.len > 0;
    Py_ssize_t size = 16;
    while (size < 2 * g) size <<= 1;
    int32_t *table = malloc(sizeof(int32_t) * size);
    int32_t *row = malloc(sizeof(int32_t) * (d > 0 ? d : 1));
    if (!table || !row) {
        free(table); free(row);
        PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&mb);
        PyBuffer_Release(&ob); PyBuffer_Release(&outb); PyBuffer_Release(&outn);
        PyBuffer_Release(&gb);
        return PyErr_NoMemory();
    }
    memset(table, 0xff, sizeof(int32_t) * size);
    uint64_t mask = (uint64_t)size - 1;
    Py_ssize_t n_groups = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < g; i++) {
        uint64_t h = 0x243F6A8885A308D3ULL;
        const int32_t *src = codes + i * d;
        for (Py_ssize_t j = 0; j < d; j++) {
            row[j] = maps[offsets[j] + src[j]];
            h = mix(h, (uint64_t)(uint32_t)row[j]);
        }
        uint64_t slot = (h ^ (h >> 29)) & mask;
        int32_t found = -1;
        for (;;) {
            int32_t at = table[slot];
            if (at < 0) break;
            if (memcmp(out_codes + (Py_ssize_t)at * d, row, sizeof(int32_t) * d) == 0) {
                found = at;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (found < 0) {
            found = (int32_t)n_groups++;
            table[slot] = found;
            memcpy(out_codes + (Py_ssize_t)found * d, row, sizeof(int32_t) * d);
            out_counts[found] = 0;
        }
        out_counts[found] += have_counts ? counts[i] : 1;
        group_of[i] = found;
    }
    Py_END_ALLOW_THREADS
    free(table);
    free(row);
    PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&mb);
    PyBuffer_Release(&ob); PyBuffer_Release(&outb); PyBuffer_Release(&outn);
    PyBuffer_Release(&gb);
    return PyLong_FromSsize_t(n_groups);
}

/* rollup_keyed(codes, d, counts, maps, offsets, strides, span, out_codes, out_counts,
 *              group_of, scratch_index, scratch_keys) -> n_groups
 *
 * rollup() when the mapped tuples fit one int64 key (sum of code * stride, below span, the
 * product of the cardinalities, which the caller checks): one key compared instead of d
 * codes. scratch_index (int32) and scratch_keys (int64): working memory the caller keeps
 * across calls, used when large enough (4 * max(g, 16) and 1.5 * g rounded up to a power
 * of two entries; the output arrays may likewise be larger than g rows). */
static inline uint64_t key_slot(int64_t key, uint64_t mask) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (h ^ (h >> 31)) & mask;
}

static PyObject *c_rollup_keyed(PyObject *self, PyObject *args) {
    Py_buffer cb, nb, mb, ob, sb, outb, outn, gb, tb, kb;
    Py_ssize_t d;
    long long span;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*Lw*w*w*w*w*", &cb, &d, &nb, &mb, &ob, &sb, &span,
                          &outb, &outn, &gb, &tb, &kb))
        return NULL;
    const int32_t *codes = cb.buf, *maps = mb.buf;
    const int64_t *counts = nb.buf, *offsets = ob.buf, *strides = sb.buf;
    int32_t *out_codes = outb.buf, *group_of = gb.buf;
    int64_t *out_counts = outn.buf;
    Py_ssize_t g = gb.len / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t n_maps = mb.len / (Py_ssize_t)sizeof(int32_t);
    int have_counts = nb.len > 0;
    Py_ssize_t n_groups = -1;
    /* the keys lie in [0, span): when that is small, a direct index replaces the hash
       table (a power of two, at most two thirds full); both in the caller's scratch,
       reused across calls, when large enough */
    int direct = span <= 4 * (long long)(g > 16 ? g : 16);
    Py_ssize_t size = 16;
    while (2 * size < 3 * g) size <<= 1;
    Py_ssize_t index_len = direct ? (Py_ssize_t)span : size;
    int own_index = (Py_ssize_t)(tb.len / sizeof(int32_t)) < index_len;
    int own_keys = !direct && (Py_ssize_t)(kb.len / sizeof(int64_t)) < size;
    int32_t *index = own_index ? malloc(sizeof(int32_t) * index_len) : tb.buf;
    int64_t *slot_keys = direct ? NULL : own_keys ? malloc(sizeof(int64_t) * size) : kb.buf;
    /* the maps times their column's stride: a code's share of the key in one look-up */
    int64_t *key_maps = malloc(sizeof(int64_t) * (n_maps > 0 ? n_maps : 1));
    /* the columns that take part in the key: one generalized to a single node adds 0 */
    Py_ssize_t *active = malloc(sizeof(Py_ssize_t) * (d > 0 ? d : 1));
    if (!key_maps || !active || !index || (!direct && !slot_keys)) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_active = 0;
    for (Py_ssize_t j = 0; j < d; j++) {
        Py_ssize_t end = j + 1 < d ? (Py_ssize_t)offsets[j + 1] : n_maps;
        int used = 0;
        for (Py_ssize_t at = (Py_ssize_t)offsets[j]; at < end; at++) {
            key_maps[at] = (int64_t)maps[at] * strides[j];
            used |= key_maps[at] != 0;
        }
        if (used) active[n_active++] = j;
    }
    /* per active column, where its share of the key starts (no reload of the offsets) */
    const int64_t **column_keys = malloc(sizeof(int64_t *) * (d > 0 ? d : 1));
    if (!column_keys) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t a = 0; a < n_active; a++) column_keys[a] = key_maps + offsets[active[a]];
    memset(index, 0xff, sizeof(int32_t) * index_len);
    Py_BEGIN_ALLOW_THREADS
    n_groups = 0;
    uint64_t mask = (uint64_t)size - 1;
    for (Py_ssize_t i = 0; i < g; i++) {
        const int32_t *src = codes + i * d;
        int64_t key = 0;
        for (Py_ssize_t a = 0; a < n_active; a++) key += column_keys[a][src[active[a]]];
        int32_t found;
        if (direct) {
            found = index[key];
            if (found < 0) index[key] = found = (int32_t)n_groups;
        } else {
            uint64_t slot = key_slot(key, mask);
            for (;;) {
                found = index[slot];
                if (found < 0 || slot_keys[slot] == key) break;
                slot = (slot + 1) & mask;
            }
            if (found < 0) {
                index[slot] = found = (int32_t)n_groups;
                slot_keys[slot] = key;
            }
        }
        if (found == n_groups) {
            n_groups++;
            int32_t *row = out_codes + (Py_ssize_t)found * d;
            for (Py_ssize_t j = 0; j < d; j++) row[j] = maps[offsets[j] + src[j]];
            out_counts[found] = 0;
        }
        out_counts[found] += have_counts ? counts[i] : 1;
        group_of[i] = found;
    }
    Py_END_ALLOW_THREADS
    free(column_keys);
done:
    free(key_maps);
    free(active);
    if (own_index) free(index);
    if (own_keys) free(slot_keys);
    PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&mb);
    PyBuffer_Release(&ob); PyBuffer_Release(&sb); PyBuffer_Release(&outb);
    PyBuffer_Release(&outn); PyBuffer_Release(&gb); PyBuffer_Release(&tb);
    PyBuffer_Release(&kb);
    return n_groups < 0 ? NULL : PyLong_FromSsize_t(n_groups);
}

/* suppression_cost(codes, d, counts, suppressed, costs, offsets) -> (rows, charged)
 *
 * Over the groups marked in suppressed (uint8 (g,)): their rows, and the sum of their rows
 * times their cost, column j's cost of a group with code c at costs[offsets[j] + c]
 * (float64). */
static PyObject *c_suppression_cost(PyObject *self, PyObject *args) {
    Py_buffer cb, nb, sb, kb, ob;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*", &cb, &d, &nb, &sb, &kb, &ob)) return NULL;
    const int32_t *codes = cb.buf;
    const int64_t *counts = nb.buf, *offsets = ob.buf;
    const uint8_t *suppressed = sb.buf;
    const double *costs = kb.buf;
    Py_ssize_t g = sb.len;
    int64_t rows = 0;
    double charged = 0.0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < g; i++) {
        if (!suppressed[i]) continue;
        const int32_t *src = codes + i * d;
        double cost = 0.0;
        for (Py_ssize_t j = 0; j < d; j++) cost += costs[offsets[j] + src[j]];
        rows += counts[i];
        charged += (double)counts[i] * cost;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&sb);
    PyBuffer_Release(&kb); PyBuffer_Release(&ob);
    return Py_BuildValue("Ld", (long long)rows, charged);
}

/* small_classes(codes, d, counts, least, most, costs, offsets) -> (rows, charged)
 *
 * suppression_cost() of the groups of fewer than least rows (costs may be empty: charged
 * 0), without a mask built first; once their rows pass most, the rows found so far (more
 * than most) and no cost. */
static PyObject *c_small_classes(PyObject *self, PyObject *args) {
    Py_buffer cb, nb, kb, ob;
    Py_ssize_t d;
    long long least, most;
    if (!PyArg_ParseTuple(args, "y*ny*LLy*y*", &cb, &d, &nb, &least, &most, &kb, &ob))
        return NULL;
    const int32_t *codes = cb.buf;
    const int64_t *counts = nb.buf, *offsets = ob.buf;
    const double *costs = kb.buf;
    int with_costs = kb.len > 0;
    Py_ssize_t g = nb.len / (Py_ssize_t)sizeof(int64_t);
    int64_t rows = 0;
    double charged = 0.0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < g && rows <= most; i++)
        if (counts[i] < least) rows += counts[i];
    if (rows <= most && with_costs) {
        for (Py_ssize_t i = 0; i < g; i++) {
            if (counts[i] >= least) continue;
            const int32_t *src = codes + i * d;
            double cost = 0.0;
            for (Py_ssize_t j = 0; j < d; j++) cost += costs[offsets[j] + src[j]];
            charged += (double)counts[i] * cost;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&kb);
    PyBuffer_Release(&ob);
    return Py_BuildValue("Ld", (long long)rows, charged);
}

static PyMethodDef methods[] = {
    {"rollup_keyed", c_rollup_keyed, METH_VARARGS, "rollup with one int64 key per tuple"},
    {"rollup", c_rollup, METH_VARARGS, "merge code tuples through per-column maps"},
    {"suppression_cost", c_suppression_cost, METH_VARARGS,
     "rows and summed cost of the suppressed groups"},
    {"small_classes", c_small_classes, METH_VARARGS,
     "rows and summed cost of the groups of fewer than least rows, up to most rows"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_recoding_c", NULL, -1, methods};

PyMODINIT_FUNC PyInit__recoding_c(void) { return PyModule_Create(&module); }
