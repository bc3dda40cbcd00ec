/*
 * Compiled code-tree constructions of compression anonymity (see compression.py).
 *
 * Every tree is returned as its merges: internal node n + i joins left[i] and right[i]
 * (leaves are the symbols 0 .. n-1), children always before their parent.
 *
 * huffman(): the two-queue construction over the symbols sorted by count (the sort is
 *   numpy's): leaves in count order, merged nodes in creation order (their weights never
 *   decrease), so each step takes the two lightest fronts; a tie goes to the leaf.
 * halving(): the notebook's weight-halving alphabetic tree (buildAlphHuffman), recursive
 *   over the target weight (depth O(log total)).
 * gw_depths(): Garsia--Wachs. The working sequence is two stacks: ``S`` holds the scanned
 *   prefix, ``R`` the rest (reversed, its top the next element), both over an infinite
 *   sentinel. When the last two of S may be joined (the one before the top weighs at most
 *   R's top) they are joined, and the joined node moves left past every lighter node of S:
 *   those go back onto R behind it, and the scan resumes there. No element is shifted in
 *   memory; each step is O(1) plus the nodes it moves. Those moves make the worst case
 *   quadratic (strictly monotone or V-shaped counts: about 6-10 s for 10^5 symbols); counts
 *   with many ties, as columns of values have, stay near linear.
 * depths_tree(): the alphabetic tree with the given leaf depths (a stack of pending
 *   subtrees: two neighbours at equal depth join one level up).
 * totals(): per node, its weight (the merges in order).
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers): numpy allocates
 * every array and this module reads and writes their buffers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

#define INF INT64_MAX

/* huffman(order, counts, left, right) */
static PyObject *c_huffman(PyObject *self, PyObject *args) {
    Py_buffer ob, cb, lb, rb;
    if (!PyArg_ParseTuple(args, "y*y*w*w*", &ob, &cb, &lb, &rb)) return NULL;
    Py_ssize_t n = cb.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *order = ob.buf, *counts = cb.buf;
    int64_t *left = lb.buf, *right = rb.buf;
    int64_t *merged_w = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    if (!merged_w) {
        PyBuffer_Release(&ob); PyBuffer_Release(&cb); PyBuffer_Release(&lb);
        PyBuffer_Release(&rb);
        return PyErr_NoMemory();
    }
    Py_ssize_t li = 0, mi = 0, m = 0;
    for (Py_ssize_t step = 0; step + 1 < n; step++) {
        int64_t node[2];
        int64_t weight[2];
        for (int t = 0; t < 2; t++) {
            if (mi < m && (li >= n || merged_w[mi] < counts[order[li]])) {
                node[t] = n + mi;
                weight[t] = merged_w[mi++];
            } else {
                node[t] = order[li];
                weight[t] = counts[order[li++]];
            }
        }
        left[m] = node[0];
        right[m] = node[1];
        merged_w[m++] = weight[0] + weight[1];
    }
    free(merged_w);
    PyBuffer_Release(&ob); PyBuffer_Release(&cb); PyBuffer_Release(&lb); PyBuffer_Release(&rb);
    Py_RETURN_NONE;
}

typedef struct {
    const int64_t *w;
    Py_ssize_t n, pos, m;
    int64_t *left, *right;
} Halving;

/* returns the node; *got receives its weight */
static int64_t halving_build(Halving *h, int64_t target, int64_t *got) {
    int64_t weight = h->w[h->pos];
    if (weight >= target) {
        *got = weight;
        return h->pos++;
    }
    int64_t have;
    int64_t node = halving_build(h, target / 2, &have);
    int64_t rest = target - have;
    if (rest <= 0) {
        *got = have;
        return node;
    }
    int64_t more;
    int64_t right = halving_build(h, rest, &more);
    h->left[h->m] = node;
    h->right[h->m] = right;
    *got = have + more;
    return h->n + h->m++;
}

/* halving(counts, left, right) -> number of merges */
static PyObject *c_halving(PyObject *self, PyObject *args) {
    Py_buffer cb, lb, rb;
    if (!PyArg_ParseTuple(args, "y*w*w*", &cb, &lb, &rb)) return NULL;
    Halving h = {cb.buf, cb.len / (Py_ssize_t)sizeof(int64_t), 0, 0, lb.buf, rb.buf};
    int64_t total = 0, got;
    for (Py_ssize_t i = 0; i < h.n; i++) total += h.w[i];
    if (h.n > 0) halving_build(&h, total, &got);
    Py_ssize_t used = h.pos, merges = h.m;
    PyBuffer_Release(&cb); PyBuffer_Release(&lb); PyBuffer_Release(&rb);
    if (used != h.n) {
        PyErr_SetString(PyExc_AssertionError, "halving: not every symbol was used");
        return NULL;
    }
    return PyLong_FromSsize_t(merges);
}

/* gw_depths(counts, depths) */
static PyObject *c_gw_depths(PyObject *self, PyObject *args) {
    Py_buffer cb, db;
    if (!PyArg_ParseTuple(args, "y*w*", &cb, &db)) return NULL;
    Py_ssize_t n = cb.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *w = cb.buf;
    int64_t *depths = db.buf;
    Py_ssize_t cap = n + 2;
    int64_t *sw = malloc(sizeof(int64_t) * cap), *sn = malloc(sizeof(int64_t) * cap);
    int64_t *rw = malloc(sizeof(int64_t) * cap), *rn = malloc(sizeof(int64_t) * cap);
    int64_t *parent = malloc(sizeof(int64_t) * (2 * n + 1));
    int64_t *depth = malloc(sizeof(int64_t) * (2 * n + 1));
    if (!sw || !sn || !rw || !rn || !parent || !depth) {
        free(sw); free(sn); free(rw); free(rn); free(parent); free(depth);
        PyBuffer_Release(&cb); PyBuffer_Release(&db);
        return PyErr_NoMemory();
    }
    Py_ssize_t st = 0, rt = 0;  /* sizes */
    sw[st] = INF; sn[st++] = -1;
    rw[rt] = INF; rn[rt++] = -1;
    for (Py_ssize_t i = n - 1; i >= 0; i--) { rw[rt] = w[i]; rn[rt++] = i; }
    int64_t next = n;
    while (next < 2 * n - 1) {
        /* S holds st - 1 real nodes; R's top is rw[rt - 1] */
        if (st >= 3 && sw[st - 2] <= rw[rt - 1]) {
            int64_t joined = sw[st - 2] + sw[st - 1];
            parent[sn[st - 2]] = parent[sn[st - 1]] = next;
            st -= 2;
            while (sw[st - 1] < joined) {  /* lighter nodes go back behind the joined one */
                rw[rt] = sw[st - 1]; rn[rt++] = sn[st - 1];
                st--;
            }
            rw[rt] = joined; rn[rt++] = next++;
        } else {
            sw[st] = rw[rt - 1]; sn[st++] = rn[rt - 1];
            rt--;
        }
    }
    if (n > 0) {
        depth[2 * n - 2] = 0;
        for (int64_t v = 2 * n - 3; v >= 0; v--) depth[v] = depth[parent[v]] + 1;
        for (Py_ssize_t i = 0; i < n; i++) depths[i] = depth[i];
    }
    free(sw); free(sn); free(rw); free(rn); free(parent); free(depth);
    PyBuffer_Release(&cb); PyBuffer_Release(&db);
    Py_RETURN_NONE;
}

/* depths_tree(depths, left, right) -> True when the depths make one alphabetic tree */
static PyObject *c_depths_tree(PyObject *self, PyObject *args) {
    Py_buffer db, lb, rb;
    if (!PyArg_ParseTuple(args, "y*w*w*", &db, &lb, &rb)) return NULL;
    Py_ssize_t n = db.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *d = db.buf;
    int64_t *left = lb.buf, *right = rb.buf;
    int64_t *node = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    int64_t *level = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    if (!node || !level) {
        free(node); free(level);
        PyBuffer_Release(&db); PyBuffer_Release(&lb); PyBuffer_Release(&rb);
        return PyErr_NoMemory();
    }
    Py_ssize_t top = 0, m = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        node[top] = s; level[top++] = d[s];
        while (top >= 2 && level[top - 1] == level[top - 2]) {
            left[m] = node[top - 2];
            right[m] = node[top - 1];
            node[top - 2] = n + m++;
            level[top - 2] -= 1;
            top--;
        }
    }
    int ok = top == 1 && level[0] == 0 && m == n - 1;
    free(node); free(level);
    PyBuffer_Release(&db); PyBuffer_Release(&lb); PyBuffer_Release(&rb);
    return PyBool_FromLong(ok);
}

/* totals(counts, left, right, total) */
static PyObject *c_totals(PyObject *self, PyObject *args) {
    Py_buffer cb, lb, rb, tb;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &cb, &lb, &rb, &tb)) return NULL;
    Py_ssize_t n = cb.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t m = lb.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *c = cb.buf, *l = lb.buf, *r = rb.buf;
    int64_t *t = tb.buf;
    for (Py_ssize_t i = 0; i < n; i++) t[i] = c[i];
    for (Py_ssize_t i = 0; i < m; i++) t[n + i] = t[l[i]] + t[r[i]];
    PyBuffer_Release(&cb); PyBuffer_Release(&lb); PyBuffer_Release(&rb); PyBuffer_Release(&tb);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"huffman", c_huffman, METH_VARARGS, "two-queue Huffman merges"},
    {"halving", c_halving, METH_VARARGS, "weight-halving alphabetic merges"},
    {"gw_depths", c_gw_depths, METH_VARARGS, "Garsia-Wachs leaf depths"},
    {"depths_tree", c_depths_tree, METH_VARARGS, "alphabetic tree from leaf depths"},
    {"totals", c_totals, METH_VARARGS, "node weights from merges"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_compression_c", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit__compression_c(void) { return PyModule_Create(&module); }
