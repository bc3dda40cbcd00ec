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
 *   is then hashed and compared alone.
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

/* rollup_keyed(codes, d, counts, maps, offsets, strides, out_codes, out_counts, group_of)
 *   -> n_groups
 *
 * rollup() when the mapped tuples fit one int64 key (sum of code * stride, the caller
 * checks the product of the cardinalities): one key compared instead of d codes. */
static PyObject *c_rollup_keyed(PyObject *self, PyObject *args) {
    Py_buffer cb, nb, mb, ob, sb, outb, outn, gb;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*w*w*w*", &cb, &d, &nb, &mb, &ob, &sb, &outb,
                          &outn, &gb))
        return NULL;
    const int32_t *codes = cb.buf, *maps = mb.buf;
    const int64_t *counts = nb.buf, *offsets = ob.buf, *strides = sb.buf;
    int32_t *out_codes = outb.buf, *group_of = gb.buf;
    int64_t *out_counts = outn.buf;
    Py_ssize_t g = gb.len / (Py_ssize_t)sizeof(int32_t);
    int have_counts = nb.len > 0;
    Py_ssize_t size = 16;
    while (size < 2 * g) size <<= 1;
    int32_t *table = malloc(sizeof(int32_t) * size);
    int64_t *keys = malloc(sizeof(int64_t) * (g > 0 ? g : 1));
    if (!table || !keys) {
        free(table); free(keys);
        PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&mb);
        PyBuffer_Release(&ob); PyBuffer_Release(&sb); PyBuffer_Release(&outb);
        PyBuffer_Release(&outn); PyBuffer_Release(&gb);
        return PyErr_NoMemory();
    }
    memset(table, 0xff, sizeof(int32_t) * size);
    uint64_t mask = (uint64_t)size - 1;
    Py_ssize_t n_groups = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < g; i++) {
        const int32_t *src = codes + i * d;
        int64_t key = 0;
        for (Py_ssize_t j = 0; j < d; j++) key += (int64_t)maps[offsets[j] + src[j]] * strides[j];
        uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
        uint64_t slot = (h ^ (h >> 31)) & mask;
        int32_t found = -1;
        for (;;) {
            int32_t at = table[slot];
            if (at < 0) break;
            if (keys[at] == key) {
                found = at;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (found < 0) {
            found = (int32_t)n_groups++;
            table[slot] = found;
            keys[found] = key;
            int32_t *row = out_codes + (Py_ssize_t)found * d;
            for (Py_ssize_t j = 0; j < d; j++) row[j] = maps[offsets[j] + src[j]];
            out_counts[found] = 0;
        }
        out_counts[found] += have_counts ? counts[i] : 1;
        group_of[i] = found;
    }
    Py_END_ALLOW_THREADS
    free(table);
    free(keys);
    PyBuffer_Release(&cb); PyBuffer_Release(&nb); PyBuffer_Release(&mb);
    PyBuffer_Release(&ob); PyBuffer_Release(&sb); PyBuffer_Release(&outb);
    PyBuffer_Release(&outn); PyBuffer_Release(&gb);
    return PyLong_FromSsize_t(n_groups);
}

static PyMethodDef methods[] = {
    {"rollup_keyed", c_rollup_keyed, METH_VARARGS, "rollup with one int64 key per tuple"},
    {"rollup", c_rollup, METH_VARARGS, "merge code tuples through per-column maps"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_recoding_c", NULL, -1, methods};

PyMODINIT_FUNC PyInit__recoding_c(void) { return PyModule_Create(&module); }
