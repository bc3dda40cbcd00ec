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
 * gw_depths(): Garsia--Wachs in O(n log n) worst case: a linked working sequence, a stack
 *   of the triples a join may have made joinable, and a splay tree (by list order, with
 *   subtree maxima) to find where a joined node lands (see garsia_wachs() below).
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

/* -- Garsia--Wachs in O(n log n) --------------------------------------------------------
 *
 * The working sequence is a doubly linked list over the node ids (0 .. n-1 the symbols,
 * n .. 2n-2 the joined nodes) between two infinite sentinels. A "triple" is named by its
 * middle node m: (prev m, m, next m); it is joinable when weight(prev m) <= weight(next m),
 * and joining it joins prev m with m. Each step joins the leftmost joinable triple, exactly
 * as the reference does, and moves the joined node left behind the nearest node at least as
 * heavy.
 *
 * Finding that triple without rescanning: every triple left of the scan point ``cur`` is
 * known not to be joinable except the ones on the stack ``pending``. A join changes only the
 * triples that contain the joined node x or the node w after the removed pair, so it
 * pushes those five middles (w, prev w, next x, x, and the node x landed behind); none is
 * right of an older entry, so the stack's top is always the leftmost candidate. The
 * nodes x passes keep their order and their triples, which stay unjoinable: nothing is
 * moved back to be scanned again (the old implementation's quadratic cost).
 *
 * Finding where x lands: every node from the start of the list up to ``cur`` is also in a
 * splay tree ordered like the list, each subtree knowing its heaviest weight, so "the
 * rightmost node before the gap weighing at least x" is one descent. The two joined nodes
 * stay in the tree, weightless (at most 2n - 1 nodes). Appends, retirements, the search and
 * the insertion are amortised O(log n): O(n log n) in all, whatever the counts. */

/* One record per node, holding the heaviest weight of each of its subtrees: the descent
 * decides where to go from the node it is at, without loading a child it does not enter
 * (on 10^6 symbols those cache misses are most of the running time). */
typedef struct {
    int64_t wt, hl, hr;        /* the weight; the heaviest in the left / right subtree, -1 none */
    int32_t lc, rc, up, prev;  /* splay children and parent; the list predecessor */
} GwNode;

typedef struct {
    GwNode *node;
    int32_t root;
    int64_t work;  /* rotations, descent steps and scan steps: the running time in units */
} Splay;

static inline int64_t splay_heaviest(const GwNode *a, int32_t v) {
    if (v < 0) return -1;
    int64_t m = a[v].wt;
    if (a[v].hl > m) m = a[v].hl;
    if (a[v].hr > m) m = a[v].hr;
    return m;
}

/* v takes its parent's place */
static inline void splay_rotate(GwNode *a, int32_t v) {
    int32_t p = a[v].up, g = a[p].up;
    if (a[p].lc == v) {
        int32_t b = a[v].rc;
        a[p].lc = b;
        a[p].hl = a[v].hr;
        if (b >= 0) a[b].up = p;
        a[v].rc = p;
        a[v].hr = splay_heaviest(a, p);
    } else {
        int32_t b = a[v].lc;
        a[p].rc = b;
        a[p].hr = a[v].hl;
        if (b >= 0) a[b].up = p;
        a[v].lc = p;
        a[v].hl = splay_heaviest(a, p);
    }
    a[p].up = v;
    a[v].up = g;
    if (g >= 0) {  /* g spans the same nodes as before: its maxima stand */
        if (a[g].lc == p) a[g].lc = v; else a[g].rc = v;
    }
}

/* v becomes the root of the tree */
static void splay(Splay *t, int32_t v) {
    GwNode *a = t->node;
    while (a[v].up >= 0) {
        t->work++;
        int32_t p = a[v].up, g = a[p].up;
        if (g >= 0) splay_rotate(a, ((a[g].lc == p) == (a[p].lc == v)) ? p : v);
        splay_rotate(a, v);
    }
}

/* v stays in the tree (its position still orders the others) but weighs nothing: no search
 * stops at it any more. Cheaper than unlinking it (one splay, not two). */
static void splay_retire(Splay *t, int32_t v) {
    splay(t, v);
    t->node[v].wt = -1;
    t->root = v;
}

/* the last node of subtree s weighing at least x (x >= 0), or -1; the deepest node visited
 * is splayed (what makes the descent amortised O(log n)) */
static int32_t splay_last_at_least(Splay *t, int32_t s, int64_t x) {
    GwNode *a = t->node;
    int32_t v = s, found = -1;
    if (v < 0) return -1;
    for (;;) {
        t->work++;
        if (a[v].hr >= x) {
            v = a[v].rc;
        } else if (a[v].wt >= x) {
            found = v;
            break;
        } else if (a[v].hl >= x) {
            v = a[v].lc;
        } else {
            break;
        }
    }
    splay(t, v);
    t->root = v;
    return found;
}

/* x goes right after j (j = -1: first); x becomes the root */
static void splay_insert_after(Splay *t, int32_t j, int32_t x) {
    GwNode *a = t->node;
    a[x].up = -1;
    if (j < 0) {
        a[x].lc = -1;
        a[x].hl = -1;
        a[x].rc = t->root;
        a[x].hr = splay_heaviest(a, t->root);
    } else {
        splay(t, j);
        a[x].rc = a[j].rc;
        a[x].hr = a[j].hr;
        a[j].rc = -1;
        a[j].hr = -1;
        a[x].lc = j;
        a[x].hl = splay_heaviest(a, j);
    }
    if (a[x].lc >= 0) a[a[x].lc].up = x;
    if (a[x].rc >= 0) a[a[x].rc].up = x;
    t->root = x;
}

static void splay_append(Splay *t, int32_t x) {
    GwNode *a = t->node;
    a[x].up = a[x].rc = -1;
    a[x].hr = -1;
    a[x].lc = t->root;
    a[x].hl = splay_heaviest(a, t->root);
    if (t->root >= 0) a[t->root].up = x;
    t->root = x;
}

/* Per symbol its depth in the tree of the combination phase; returns the work done (see
 * Splay.work), or -1 when out of memory. Runs without the GIL: plain memory only. */
static int64_t garsia_wachs(const int64_t *counts, Py_ssize_t n, int64_t *depths) {
    if (n == 1) {
        depths[0] = 0;
        return 1;
    }
    const int32_t nodes = (int32_t)(2 * n - 1), first = nodes, last = nodes + 1;
    Py_ssize_t slots = (Py_ssize_t)nodes + 2;
    GwNode *a = malloc(sizeof(GwNode) * slots);
    int32_t *next = malloc(sizeof(int32_t) * slots), *parent = malloc(sizeof(int32_t) * slots);
    int32_t *pending = malloc(sizeof(int32_t) * (5 * (Py_ssize_t)n + 8));
    int64_t status = -1;
    if (!a || !next || !parent || !pending) goto done;
    for (int32_t v = 0; v < n; v++) {
        a[v].wt = counts[v];
        a[v].prev = v - 1;
        next[v] = v + 1;
    }
    a[0].prev = first;
    next[n - 1] = last;
    a[first].wt = a[last].wt = INF;
    next[first] = 0;
    a[last].prev = (int32_t)(n - 1);
    Splay t = {a, -1, 0};
    int32_t cur = 0, joined = (int32_t)n;
    splay_append(&t, cur);
    Py_ssize_t top = 0;
    while (joined < nodes) {
        t.work++;
        int32_t m;
        if (top > 0) {
            m = pending[--top];
            if (a[m].prev == -2) continue;  /* joined away since it was pushed */
        } else {
            m = cur;
        }
        int32_t u = a[m].prev, w = next[m];
        if (a[u].wt > a[w].wt) {  /* not joinable (a sentinel neighbour never is) */
            if (m == cur && top == 0) {
                cur = w;  /* never the last sentinel: (u, last node, last) is joinable */
                splay_append(&t, cur);
            }
            continue;
        }
        int32_t x = joined++;
        int64_t weight = a[u].wt + a[m].wt;
        a[x].wt = weight;
        parent[u] = parent[m] = x;
        splay_retire(&t, u);
        splay_retire(&t, m);
        int32_t before = a[u].prev;
        next[before] = w;
        a[w].prev = before;
        a[u].prev = a[m].prev = -2;
        /* the tree nodes before the gap: all of them after a join at the scan point, else
         * the ones before w */
        int32_t scope = t.root;
        if (m != cur) {
            splay(&t, w);
            t.root = w;
            scope = a[w].lc;
        }
        int32_t j = scope >= 0 ? splay_last_at_least(&t, scope, weight) : -1;
        splay_insert_after(&t, j, x);
        int32_t after = j >= 0 ? j : first;
        next[x] = next[after];
        a[x].prev = after;
        a[next[after]].prev = x;
        next[after] = x;
        if (m == cur) {
            if (w != last) {
                cur = w;
                splay_append(&t, cur);
            } else {
                cur = a[last].prev;
            }
        }
        if (w != last) pending[top++] = w;
        pending[top++] = a[w].prev;
        if (next[x] != last) pending[top++] = next[x];
        pending[top++] = x;
        if (j >= 0) pending[top++] = j;
    }
    int32_t *depth = next;  /* reused: the list is done with */
    depth[nodes - 1] = 0;
    for (int32_t v = nodes - 2; v >= 0; v--) depth[v] = depth[parent[v]] + 1;
    for (Py_ssize_t i = 0; i < n; i++) depths[i] = depth[i];
    status = t.work;
done:
    free(a); free(next); free(parent); free(pending);
    return status;
}

/* gw_depths(counts, depths) -> work: int64 buffers of equal length, counts >= 1; the work
 * (rotations, descent and scan steps) lets a test check the O(n log n) growth without a
 * clock */
static PyObject *c_gw_depths(PyObject *self, PyObject *args) {
    Py_buffer cb, db;
    if (!PyArg_ParseTuple(args, "y*w*", &cb, &db)) return NULL;
    Py_ssize_t n = cb.len / (Py_ssize_t)sizeof(int64_t);
    const char *problem = NULL;
    if (cb.len % (Py_ssize_t)sizeof(int64_t) || db.len != cb.len)
        problem = "gw_depths: counts and depths must be int64 buffers of equal length";
    else if (n >= (Py_ssize_t)1 << 30)
        problem = "gw_depths: at most 2^30 - 1 symbols";
    if (problem) {
        PyBuffer_Release(&cb); PyBuffer_Release(&db);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    int64_t work = 0;
    if (n > 0) {
        Py_BEGIN_ALLOW_THREADS
        work = garsia_wachs(cb.buf, n, db.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&cb); PyBuffer_Release(&db);
    if (work < 0) return PyErr_NoMemory();
    return PyLong_FromLongLong(work);
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
