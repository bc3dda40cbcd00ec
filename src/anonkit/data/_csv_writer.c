/* Writing a table as CSV, row after row, straight from Arrow's buffers.
 *
 * A released table is mostly dictionary-encoded: a generalized quasi-identifier has a few
 * thousand labels and a million rows point at them. pyarrow's CSV writer first decodes every
 * dictionary into a full string column and then quotes every string, which is most of the
 * time a million-row release spends writing. Here a dictionary column's labels are escaped
 * once, by the caller, and each row copies the bytes of its label; plain string columns are
 * copied value by value and quoted only when they have to be (the separator, a quote or a
 * line break inside, or an empty string, which must stay distinct from a missing value).
 *
 * The caller (anonkit.data.write) turns every column into a list of chunks, each a tuple
 *   (0, length, n_labels, valid, indices, label_offsets, label_bytes)  a dictionary chunk,
 *   (1, length, offset_width, valid, offsets, data, None)             a string chunk, or
 *   (2, length, offset_width, valid, offsets, data, None)             a string chunk whose
 *       empty texts are written as empty cells (text read verbatim from a CSV file, where
 *       the two were never distinct).
 * ``valid`` is None or one byte per row (0: missing, written as an empty cell); ``indices``
 * int32; ``label_offsets`` int64 (n_labels + 1); ``offsets`` int32 or int64 as
 * ``offset_width`` says (length + 1 of them, not rebased); labels come escaped.
 */
#define _GNU_SOURCE /* O_DIRECT */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int kind; /* 0: dictionary, 1: strings, 2: strings read verbatim */
    Py_ssize_t length;
    const uint8_t *valid; /* NULL: no missing values */
    const int32_t *indices;
    const int64_t *label_offsets;
    const char *label_bytes;
    Py_ssize_t n_labels;
    const void *offsets;
    int wide_offsets; /* offsets are int64 (large_string) */
    const char *data;
} Chunk;

typedef struct {
    Chunk *chunks;
    Py_ssize_t n_chunks;
} Column;

/* Rows are formatted in blocks, by two threads at once, while the calling thread writes
 * the finished blocks in order: formatting a million rows and copying them into the page
 * cache cost about the same, and on two cores all three overlap. A block lives in one of
 * SLOTS buffers; a formatter waits for its slot to be written before reusing it. */
#define ROWS_PER_BLOCK 8192
#define FORMATTERS 2
#define SLOTS (2 * FORMATTERS)

typedef struct {
    char *bytes;
    size_t used, cap;
    Py_ssize_t block; /* the block it holds, -1: free */
    int full;         /* formatted, waiting to be written */
} Slot;

typedef struct {
    const Column *cols;
    Py_ssize_t n_cols, n_rows, n_blocks;
    char sep;
    const char *header;
    size_t header_len;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    Slot slots[SLOTS];
    int stop;            /* an error anywhere: everybody stops */
    int failed_errno;    /* of write(2) */
    int out_of_memory;
    Py_ssize_t bad_row, bad_col; /* a code past its dictionary */
} Job;

typedef struct {
    Job *job;
    int first_block;
} Formatter;

static int reserve(Slot *s, size_t n) {
    if (s->used + n <= s->cap)
        return 0;
    size_t cap = s->cap ? 2 * s->cap : (size_t)1 << 21;
    while (cap < s->used + n)
        cap *= 2;
    char *grown = PyMem_RawRealloc(s->bytes, cap);
    if (grown == NULL)
        return -1;
    s->bytes = grown;
    s->cap = cap;
    return 0;
}

static inline int put(Slot *s, const char *bytes, size_t n) {
    if (reserve(s, n) < 0)
        return -1;
    memcpy(s->bytes + s->used, bytes, n);
    s->used += n;
    return 0;
}

static int needs_quotes(const char *v, size_t n, char sep, int empty_is_missing) {
    if (n == 0)
        return !empty_is_missing; /* "" is an empty string, an empty field a missing value */
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == sep || c == '"' || c == '\n' || c == '\r')
            return 1;
    }
    return 0;
}

static int put_quoted(Slot *s, const char *v, size_t n) {
    size_t quotes = 0;
    for (size_t i = 0; i < n; i++)
        quotes += v[i] == '"';
    if (reserve(s, n + quotes + 2) < 0)
        return -1;
    char *out = s->bytes + s->used;
    *out++ = '"';
    for (size_t i = 0; i < n; i++) {
        *out++ = v[i];
        if (v[i] == '"') /* a quote inside is written twice */
            *out++ = '"';
    }
    *out++ = '"';
    s->used = (size_t)(out - s->bytes);
    return 0;
}

/* 0, -1 out of memory, -2 a code past its dictionary */
static inline int put_cell(Slot *s, const Chunk *c, Py_ssize_t row, char sep) {
    if (c->valid != NULL && !c->valid[row])
        return 0;
    if (c->kind == 0) {
        int32_t code = c->indices[row];
        if (code < 0 || code >= c->n_labels)
            return -2;
        int64_t a = c->label_offsets[code], b = c->label_offsets[code + 1];
        return put(s, c->label_bytes + a, (size_t)(b - a));
    }
    int64_t a, b;
    if (c->wide_offsets) {
        a = ((const int64_t *)c->offsets)[row];
        b = ((const int64_t *)c->offsets)[row + 1];
    } else {
        a = ((const int32_t *)c->offsets)[row];
        b = ((const int32_t *)c->offsets)[row + 1];
    }
    const char *v = c->data + a;
    size_t n = (size_t)(b - a);
    if (needs_quotes(v, n, sep, c->kind == 2))
        return put_quoted(s, v, n);
    return put(s, v, n);
}

/* Rows [r0, r1) into ``s``; 0 or an error of put_cell (with the row and column). */
static int format_rows(const Job *job, Slot *s, Py_ssize_t r0, Py_ssize_t r1,
                       Py_ssize_t *bad_row, Py_ssize_t *bad_col) {
    Py_ssize_t n_cols = job->n_cols;
    /* each column's place: the chunk holding the row, and the row inside it */
    Py_ssize_t *chunk_at = PyMem_RawMalloc(2 * (size_t)(n_cols ? n_cols : 1) * sizeof(Py_ssize_t));
    if (chunk_at == NULL)
        return -1;
    Py_ssize_t *row_in = chunk_at + n_cols;
    int status = 0;
    for (Py_ssize_t j = 0; j < n_cols; j++) {
        const Column *col = &job->cols[j];
        Py_ssize_t at = 0, first = 0;
        while (at + 1 < col->n_chunks && first + col->chunks[at].length <= r0) {
            first += col->chunks[at].length;
            at++;
        }
        chunk_at[j] = at;
        row_in[j] = r0 - first;
    }
    for (Py_ssize_t r = r0; r < r1 && status == 0; r++) {
        for (Py_ssize_t j = 0; j < n_cols; j++) {
            const Column *col = &job->cols[j];
            while (row_in[j] >= col->chunks[chunk_at[j]].length) { /* next non-empty chunk */
                chunk_at[j]++;
                row_in[j] = 0;
            }
            status = put_cell(s, &col->chunks[chunk_at[j]], row_in[j], job->sep);
            row_in[j]++;
            if (status == 0)
                status = put(s, j + 1 < n_cols ? &job->sep : "\n", 1);
            if (status < 0) {
                *bad_row = r;
                *bad_col = j;
                break;
            }
        }
    }
    PyMem_RawFree(chunk_at);
    return status;
}

/* Keeps the Py_buffers of one call alive until it ends. */
typedef struct {
    Py_buffer *views;
    Py_ssize_t n, cap;
} Views;

static const void *view_of(Views *vs, PyObject *obj, const char *what, Py_ssize_t itemsize,
                           Py_ssize_t min_items) {
    if (vs->n == vs->cap) {
        Py_ssize_t cap = vs->cap ? 2 * vs->cap : 64;
        Py_buffer *grown = PyMem_Realloc(vs->views, (size_t)cap * sizeof(Py_buffer));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        vs->views = grown;
        vs->cap = cap;
    }
    Py_buffer *v = &vs->views[vs->n];
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    vs->n++;
    if (v->len < itemsize * min_items) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, fewer than the %zd expected", what,
                     v->len, itemsize * min_items);
        return NULL;
    }
    return v->buf;
}

static void release_views(Views *vs) {
    for (Py_ssize_t i = 0; i < vs->n; i++)
        PyBuffer_Release(&vs->views[i]);
    PyMem_Free(vs->views);
}

static int parse_chunk(Views *vs, PyObject *spec, Chunk *c) {
    PyObject *valid, *a, *b, *d;
    if (!PyArg_ParseTuple(spec, "innOOOO", &c->kind, &c->length, &c->n_labels, &valid, &a, &b,
                          &d))
        return -1;
    c->valid = NULL;
    if (valid != Py_None && (c->valid = view_of(vs, valid, "validity", 1, c->length)) == NULL)
        return -1;
    if (c->kind == 0) {
        if ((c->indices = view_of(vs, a, "indices", 4, c->length)) == NULL ||
            (c->label_offsets = view_of(vs, b, "label offsets", 8, c->n_labels + 1)) == NULL ||
            (c->label_bytes = view_of(vs, d, "label bytes", 1, 0)) == NULL)
            return -1;
        return 0;
    }
    if (c->kind != 1 && c->kind != 2) {
        PyErr_Format(PyExc_ValueError, "unknown chunk kind %d", c->kind);
        return -1;
    }
    /* n_labels carries the offsets' width for a string chunk: 4 or 8 bytes */
    c->wide_offsets = c->n_labels == 8;
    if ((c->offsets = view_of(vs, a, "offsets", c->wide_offsets ? 8 : 4, c->length + 1)) ==
            NULL ||
        (c->data = view_of(vs, b, "string data", 1, 0)) == NULL)
        return -1;
    return 0;
}

static void *formatter_main(void *arg) {
    Formatter *f = arg;
    Job *job = f->job;
    for (Py_ssize_t b = f->first_block; b < job->n_blocks; b += FORMATTERS) {
        Slot *s = &job->slots[b % SLOTS];
        pthread_mutex_lock(&job->lock);
        while (s->block != -1 && !job->stop) /* still holds an older block */
            pthread_cond_wait(&job->changed, &job->lock);
        int stop = job->stop;
        if (!stop) {
            s->block = b;
            s->full = 0;
            s->used = 0;
        }
        pthread_mutex_unlock(&job->lock);
        if (stop)
            break;
        Py_ssize_t r0 = b * ROWS_PER_BLOCK;
        Py_ssize_t r1 = r0 + ROWS_PER_BLOCK < job->n_rows ? r0 + ROWS_PER_BLOCK : job->n_rows;
        Py_ssize_t bad_row = -1, bad_col = -1;
        int status = b == 0 ? put(s, job->header, job->header_len) : 0;
        if (status == 0)
            status = format_rows(job, s, r0, r1, &bad_row, &bad_col);
        pthread_mutex_lock(&job->lock);
        if (status < 0 && !job->stop) {
            job->stop = 1;
            job->out_of_memory = status == -1;
            job->bad_row = bad_row;
            job->bad_col = bad_col;
        }
        s->full = 1;
        pthread_cond_broadcast(&job->changed);
        pthread_mutex_unlock(&job->lock);
        if (status < 0)
            break;
    }
    return NULL;
}

static int write_all(int fd, const char *bytes, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, bytes + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        done += (size_t)w;
    }
    return 0;
}

/* Output through an aligned staging buffer when the file was opened with O_DIRECT: the
 * bytes then go from this buffer to the device, not first into the page cache, which on a
 * busy machine costs as much CPU as formatting them. The kernel wants whole, aligned
 * blocks: the tail is written after O_DIRECT is turned off, and a file system that refuses
 * direct writes (EINVAL) simply gets buffered ones from then on. */
#define STAGE (8 << 20)
#define ALIGN 4096

typedef struct {
    int fd;
    int direct;
    char *stage;
    size_t used;
} Out;

static void out_buffered(Out *o) {
    int flags = fcntl(o->fd, F_GETFL);
    if (flags != -1)
        fcntl(o->fd, F_SETFL, flags & ~O_DIRECT);
    o->direct = 0;
}

/* write the staged whole blocks; keep the rest staged. Returns 0 or an errno. */
static int out_drain(Out *o, int all) {
    size_t whole = all ? o->used : o->used / ALIGN * ALIGN;
    if (whole == 0)
        return 0;
    if (all && whole % ALIGN)
        out_buffered(o);
    size_t done = 0;
    while (done < whole) {
        ssize_t w = write(o->fd, o->stage + done, whole - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EINVAL && o->direct) {
                out_buffered(o);
                continue;
            }
            return errno;
        }
        done += (size_t)w;
    }
    memmove(o->stage, o->stage + whole, o->used - whole);
    o->used -= whole;
    return 0;
}

static int out_write(Out *o, const char *bytes, size_t n) {
    if (!o->direct)
        return write_all(o->fd, bytes, n);
    while (n > 0) {
        size_t take = STAGE - o->used < n ? STAGE - o->used : n;
        memcpy(o->stage + o->used, bytes, take);
        o->used += take;
        bytes += take;
        n -= take;
        if (o->used == STAGE) {
            int err = out_drain(o, 0);
            if (err)
                return err;
        }
    }
    return 0;
}

static int out_open(Out *o, int fd) {
    o->fd = fd;
    o->used = 0;
    o->stage = NULL;
    int flags = fcntl(fd, F_GETFL);
    o->direct = flags != -1 && (flags & O_DIRECT);
    if (o->direct && posix_memalign((void **)&o->stage, ALIGN, STAGE) != 0) {
        o->stage = NULL;
        out_buffered(o);
    }
    return 0;
}

/* write what is staged (unless ``discard``), free the stage; returns 0 or an errno */
static int out_close(Out *o, int discard) {
    int err = discard ? 0 : out_drain(o, 1);
    free(o->stage);
    return err;
}

/* The calling thread's part: write the blocks in order as they are formatted. Returns 0,
 * or -1 with the reason in the job (or ``errno`` when a thread cannot start). */
static int run_job(Job *job, int fd) {
    pthread_t threads[FORMATTERS];
    Formatter formatters[FORMATTERS];
    int started = 0;
    int spawn_errno = 0;
    for (int t = 0; t < FORMATTERS; t++) {
        formatters[t].job = job;
        formatters[t].first_block = t;
        int err = pthread_create(&threads[t], NULL, formatter_main, &formatters[t]);
        if (err) {
            spawn_errno = err;
            pthread_mutex_lock(&job->lock);
            job->stop = 1;
            pthread_cond_broadcast(&job->changed);
            pthread_mutex_unlock(&job->lock);
            break;
        }
        started++;
    }
    Out out;
    out_open(&out, fd);
    for (Py_ssize_t b = 0; b < job->n_blocks && !spawn_errno; b++) {
        Slot *s = &job->slots[b % SLOTS];
        pthread_mutex_lock(&job->lock);
        while (!(s->block == b && s->full) && !job->stop)
            pthread_cond_wait(&job->changed, &job->lock);
        int stop = job->stop;
        pthread_mutex_unlock(&job->lock);
        if (stop)
            break;
        int err = out_write(&out, s->bytes, s->used);
        pthread_mutex_lock(&job->lock);
        if (err && !job->stop) {
            job->stop = 1;
            job->failed_errno = err;
        }
        s->block = -1;
        pthread_cond_broadcast(&job->changed);
        pthread_mutex_unlock(&job->lock);
    }
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    int err = out_close(&out, job->stop || spawn_errno);
    if (err && !job->stop) {
        job->stop = 1;
        job->failed_errno = err;
    }
    if (spawn_errno) {
        errno = spawn_errno;
        return -1;
    }
    return job->stop ? -1 : 0;
}

static PyObject *write_csv(PyObject *self, PyObject *args) {
    (void)self;
    int fd;
    Py_buffer header;
    PyObject *columns;
    Py_ssize_t n_rows;
    char sep;
    if (!PyArg_ParseTuple(args, "iy*Onc", &fd, &header, &columns, &n_rows, &sep))
        return NULL;
    Views vs = {NULL, 0, 0};
    Column *cols = NULL;
    Py_ssize_t n_cols = 0;
    PyObject *result = NULL;
    if (!PyList_Check(columns)) {
        PyErr_SetString(PyExc_TypeError, "columns must be a list of lists of chunks");
        goto done;
    }
    n_cols = PyList_GET_SIZE(columns);
    cols = PyMem_Calloc((size_t)(n_cols ? n_cols : 1), sizeof(Column));
    if (cols == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_cols; j++) {
        PyObject *chunks = PyList_GET_ITEM(columns, j);
        if (!PyList_Check(chunks)) {
            PyErr_SetString(PyExc_TypeError, "each column must be a list of chunks");
            goto done;
        }
        Py_ssize_t m = PyList_GET_SIZE(chunks), total = 0;
        cols[j].chunks = PyMem_Calloc((size_t)(m ? m : 1), sizeof(Chunk));
        if (cols[j].chunks == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        cols[j].n_chunks = m;
        for (Py_ssize_t i = 0; i < m; i++) {
            if (parse_chunk(&vs, PyList_GET_ITEM(chunks, i), &cols[j].chunks[i]) < 0)
                goto done;
            total += cols[j].chunks[i].length;
        }
        if (total != n_rows) {
            PyErr_Format(PyExc_ValueError, "column %zd has %zd rows, not %zd", j, total, n_rows);
            goto done;
        }
    }

    Job job;
    memset(&job, 0, sizeof(job));
    job.cols = cols;
    job.n_cols = n_cols;
    job.n_rows = n_rows;
    /* at least one block, so a table without rows still gets its header */
    job.n_blocks = n_rows > 0 ? (n_rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK : 1;
    job.sep = sep;
    job.header = header.buf;
    job.header_len = (size_t)header.len;
    for (int i = 0; i < SLOTS; i++)
        job.slots[i].block = -1;
    pthread_mutex_init(&job.lock, NULL);
    pthread_cond_init(&job.changed, NULL);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = run_job(&job, fd);
    Py_END_ALLOW_THREADS
    int spawn_errno = errno;
    pthread_mutex_destroy(&job.lock);
    pthread_cond_destroy(&job.changed);
    for (int i = 0; i < SLOTS; i++)
        PyMem_RawFree(job.slots[i].bytes);
    if (status < 0) {
        if (job.out_of_memory)
            PyErr_NoMemory();
        else if (job.bad_row >= 0 && !job.failed_errno)
            PyErr_Format(PyExc_ValueError, "row %zd of column %zd points past its dictionary",
                         job.bad_row, job.bad_col);
        else {
            errno = job.failed_errno ? job.failed_errno : spawn_errno;
            PyErr_SetFromErrno(PyExc_OSError);
        }
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (cols != NULL) {
        for (Py_ssize_t j = 0; j < n_cols; j++)
            PyMem_Free(cols[j].chunks);
        PyMem_Free(cols);
    }
    release_views(&vs);
    PyBuffer_Release(&header);
    return result;
}

static PyMethodDef methods[] = {
    {"write_csv", write_csv, METH_VARARGS,
     "write_csv(fd, header, columns, n_rows, sep): write rows to the open file ``fd``."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csv_writer", "CSV rows from Arrow buffers (see anonkit.data.write).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__csv_writer(void) { return PyModule_Create(&module); }
