/* The row section of a text-protocol result set -> Arrow binary columns, with no Python object
 * per cell (libs/snapshot/row_stream.py calls it; its docstring has the contract).
 *
 * Wire format (MySQL client/server protocol, "Text Resultset"): after the column definitions,
 * one packet per row, then an EOF packet (0xFE, payload < 9 bytes: PyMySQL does not ask for
 * CLIENT_DEPRECATE_EOF) or an ERR packet (0xFF) when the statement fails mid-way.
 *
 *   packet   := int<3> payload_length, int<1> sequence_id, payload
 *   row      := value{column_count}
 *   value    := 0xFB (NULL) | lenenc length, that many bytes
 *   lenenc   := byte < 0xFB | 0xFC int<2> | 0xFD int<3> | 0xFE int<8>
 *
 * A payload of 0xFFFFFF bytes is continued by the next packet (a row of 16 MB or more): such a
 * row's payloads are concatenated into a scratch buffer and parsed like any other.
 *
 * Two passes over the same packets: the first checks everything and sizes each column's data,
 * the second copies into bytes objects of exactly that size (no realloc, no copy afterwards).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAYLOAD 0xFFFFFFu
#define INT32_LIMIT 0x7FFFFFFFll /* Arrow binary: int32 offsets */

enum { END_NONE = 0, END_EOF = 1, END_ERR = 2 };

typedef struct {
    const uint8_t *buf;
    Py_ssize_t len;
    Py_ssize_t pos;   /* start of the next packet */
    int seq;          /* the sequence id it must carry */
    char error[200];  /* set when malformed */
} Reader;

typedef struct {
    const uint8_t *payload; /* into buf, or scratch for a split row */
    Py_ssize_t size;
    Py_ssize_t next;        /* position after the row's last packet */
    int next_seq;
    uint8_t *scratch;       /* malloc'ed for a split row, else NULL */
} Packet;

static uint32_t le24(const uint8_t *p) { return p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16); }

/* 1: a whole logical packet at r->pos; 0: incomplete (*need = bytes beyond r->len it needs at
 * least); -1: malformed (r->error) or out of memory. */
static int next_packet(Reader *r, Packet *out, Py_ssize_t *need) {
    Py_ssize_t pos = r->pos, total = 0;
    int seq = r->seq, pieces = 0;
    uint32_t size;
    out->scratch = NULL;
    do {  /* walk the pieces: one unless the payload is MAX_PAYLOAD */
        if (r->len - pos < 4) {
            *need = pos + 4 - r->len;
            return 0;
        }
        size = le24(r->buf + pos);
        if (r->buf[pos + 3] != (uint8_t)seq) {
            snprintf(r->error, sizeof r->error, "packet at byte %zd has sequence id %d, expected %d",
                     pos, r->buf[pos + 3], seq);
            return -1;
        }
        if (r->len - pos - 4 < (Py_ssize_t)size) {
            *need = pos + 4 + (Py_ssize_t)size - r->len;
            return 0;
        }
        total += size;
        pos += 4 + (Py_ssize_t)size;
        seq = (seq + 1) & 0xFF;
        pieces++;
    } while (size == MAX_PAYLOAD);
    out->next = pos;
    out->next_seq = seq;
    out->size = total;
    if (pieces == 1) {
        out->payload = r->buf + r->pos + 4;
        return 1;
    }
    out->scratch = malloc(total > 0 ? (size_t)total : 1);
    if (out->scratch == NULL) {
        snprintf(r->error, sizeof r->error, "out of memory for a row of %zd bytes", total);
        return -1;
    }
    Py_ssize_t at = r->pos, filled = 0;
    for (int i = 0; i < pieces; i++) {
        size = le24(r->buf + at);
        memcpy(out->scratch + filled, r->buf + at + 4, size);
        filled += size;
        at += 4 + (Py_ssize_t)size;
    }
    out->payload = out->scratch;
    return 1;
}

/* Each value's start and length (-1: NULL) in a row payload; 0, or -1 with r->error. */
static int scan_row(Reader *r, const uint8_t *p, Py_ssize_t n, Py_ssize_t ncols,
                    Py_ssize_t *starts, int64_t *lens) {
    Py_ssize_t at = 0;
    for (Py_ssize_t c = 0; c < ncols; c++) {
        if (at >= n) {
            snprintf(r->error, sizeof r->error, "row packet at byte %zd ends before column %zd of %zd",
                     r->pos, c + 1, ncols);
            return -1;
        }
        uint8_t first = p[at];
        uint64_t length;
        int width = first < 0xFB ? 0 : first == 0xFC ? 2 : first == 0xFD ? 3 : first == 0xFE ? 8 : -1;
        if (first == 0xFB) {
            starts[c] = at + 1;
            lens[c] = -1;
            at += 1;
            continue;
        }
        if (width < 0) {
            snprintf(r->error, sizeof r->error, "row packet at byte %zd: column %zd starts with 0x%02X",
                     r->pos, c + 1, first);
            return -1;
        }
        if (n - at - 1 < width) {
            snprintf(r->error, sizeof r->error, "row packet at byte %zd: the length of column %zd runs "
                     "past the packet", r->pos, c + 1);
            return -1;
        }
        if (width == 0) {
            length = first;
        } else {
            length = 0;
            for (int i = width - 1; i >= 0; i--)
                length = (length << 8) | p[at + 1 + i];
        }
        at += 1 + width;
        if (length > (uint64_t)(n - at)) {
            snprintf(r->error, sizeof r->error, "row packet at byte %zd: column %zd's %llu bytes run "
                     "past the packet", r->pos, c + 1, (unsigned long long)length);
            return -1;
        }
        starts[c] = at;
        lens[c] = (int64_t)length;
        at += (Py_ssize_t)length;
    }
    if (at != n) {
        snprintf(r->error, sizeof r->error, "row packet at byte %zd: %zd bytes after its %zd columns",
                 r->pos, n - at, ncols);
        return -1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t rows, need;
    int end;
    Py_ssize_t end_at, end_size; /* the terminator's payload in buf */
} Scan;

/* Pass 1: how many whole rows fit the limits, each column's data bytes and NULLs. */
static int scan(Reader *r, Py_ssize_t ncols, Py_ssize_t max_rows, Py_ssize_t max_bytes,
                int64_t *data, Py_ssize_t *nulls, Py_ssize_t *starts, int64_t *lens, Scan *s) {
    int64_t bytes = 0;
    memset(s, 0, sizeof *s);
    while (s->rows < max_rows) {
        Packet pk;
        int got = next_packet(r, &pk, &s->need);
        if (got <= 0)
            return got;
        uint8_t first = pk.size > 0 ? pk.payload[0] : 0;
        if (pk.scratch == NULL && ((first == 0xFE && pk.size < 9) || first == 0xFF)) {
            s->end = first == 0xFE ? END_EOF : END_ERR;
            s->end_at = r->pos + 4;
            s->end_size = pk.size;
            r->pos = pk.next;
            r->seq = pk.next_seq;
            return 1;
        }
        int bad = scan_row(r, pk.payload, pk.size, ncols, starts, lens);
        free(pk.scratch);
        if (bad)
            return -1;
        int64_t row_bytes = 0;
        int over = 0;
        for (Py_ssize_t c = 0; c < ncols; c++) {
            if (lens[c] > 0) {
                row_bytes += lens[c];
                over |= data[c] + lens[c] > INT32_LIMIT;
            }
        }
        if (s->rows > 0 && (over || bytes + row_bytes > max_bytes))
            return 1;  /* the next call starts with this row */
        if (over) {
            snprintf(r->error, sizeof r->error, "a row at byte %zd holds 2 GB or more in one column", r->pos);
            return -1;
        }
        for (Py_ssize_t c = 0; c < ncols; c++) {
            if (lens[c] < 0)
                nulls[c]++;
            else
                data[c] += lens[c];
        }
        bytes += row_bytes;
        s->rows++;
        r->pos = pk.next;
        r->seq = pk.next_seq;
    }
    return 1;
}

/* Pass 2: the same rows again, copied into the columns' buffers (already checked). */
static int fill(Reader *r, Py_ssize_t ncols, Py_ssize_t rows, uint8_t **validity, int32_t **offsets,
                uint8_t **data, Py_ssize_t *starts, int64_t *lens) {
    Py_ssize_t need;
    for (Py_ssize_t c = 0; c < ncols; c++)
        offsets[c][0] = 0;
    for (Py_ssize_t i = 0; i < rows; i++) {
        Packet pk;
        if (next_packet(r, &pk, &need) != 1 || scan_row(r, pk.payload, pk.size, ncols, starts, lens)) {
            free(pk.scratch);
            return -1;
        }
        for (Py_ssize_t c = 0; c < ncols; c++) {
            int32_t end = offsets[c][i];
            if (lens[c] >= 0) {
                memcpy(data[c] + end, pk.payload + starts[c], (size_t)lens[c]);
                end += (int32_t)lens[c];
                if (validity[c])
                    validity[c][i >> 3] |= (uint8_t)(1u << (i & 7));
            }
            offsets[c][i + 1] = end;
        }
        free(pk.scratch);
        r->pos = pk.next;
        r->seq = pk.next_seq;
    }
    return 0;
}

static PyObject *new_bytes(Py_ssize_t size, int zero, uint8_t **at) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    if (b == NULL)
        return NULL;
    *at = (uint8_t *)PyBytes_AsString(b);
    if (zero)
        memset(*at, 0, (size_t)size);
    return b;
}

/* The columns list: per column (validity bytes or None, offsets bytes, data bytes, null count). */
static PyObject *columns_of(Reader *r, Py_ssize_t ncols, Py_ssize_t rows, const int64_t *sizes,
                            const Py_ssize_t *nulls, Py_ssize_t *starts, int64_t *lens) {
    PyObject *list = PyList_New(ncols);
    uint8_t **validity = calloc((size_t)ncols + 1, sizeof *validity);
    uint8_t **data = calloc((size_t)ncols + 1, sizeof *data);
    int32_t **offsets = calloc((size_t)ncols + 1, sizeof *offsets);
    int failed = list == NULL || !validity || !data || !offsets;
    if (failed && list != NULL)
        PyErr_NoMemory();
    for (Py_ssize_t c = 0; !failed && c < ncols; c++) {
        PyObject *v = Py_None, *o, *d, *t;
        uint8_t *offsets_at = NULL;
        if (nulls[c] > 0)
            v = new_bytes((rows + 7) / 8, 1, &validity[c]);
        else
            Py_INCREF(v);
        o = new_bytes((rows + 1) * 4, 0, &offsets_at);
        offsets[c] = (int32_t *)offsets_at;
        d = new_bytes((Py_ssize_t)sizes[c], 0, &data[c]);
        t = (v && o && d) ? Py_BuildValue("(NNNn)", v, o, d, nulls[c]) : NULL;
        if (t == NULL) {
            if (!(v && o && d)) {
                Py_XDECREF(v);
                Py_XDECREF(o);
                Py_XDECREF(d);
            }
            failed = 1;
        } else {
            PyList_SetItem(list, c, t);
        }
    }
    if (!failed) {
        int bad;
        Py_BEGIN_ALLOW_THREADS
        bad = fill(r, ncols, rows, validity, offsets, data, starts, lens);
        Py_END_ALLOW_THREADS
        if (bad) {
            PyErr_Format(PyExc_RuntimeError, "row packets changed between passes: %s", r->error);
            failed = 1;
        }
    }
    free(validity);
    free(data);
    free(offsets);
    if (failed) {
        Py_XDECREF(list);
        return NULL;
    }
    return list;
}

PyDoc_STRVAR(parse_doc,
"parse(buffer, columns, seq, max_rows, max_bytes, dry=False)\n"
"-> (consumed, rows, seq, end, terminator, need, columns)\n\n"
"The whole row packets at the start of buffer (text result set, `columns` values a row, the\n"
"first with sequence id `seq`), at most max_rows rows and, unless one row is larger, max_bytes\n"
"of values. end: 0 more rows follow, 1 EOF packet, 2 ERR packet (consumed, its payload is\n"
"`terminator`). need: bytes past the buffer's end the next packet needs (0 if stopped by a\n"
"limit or an end). columns: per column (validity or None, int32 offsets, data, null count),\n"
"the buffers of an Arrow binary array; None when dry (only checks and counts). ValueError when\n"
"a packet is malformed.");

static PyObject *parse(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t ncols, max_rows, max_bytes;
    int seq, dry = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ninn|p", &view, &ncols, &seq, &max_rows, &max_bytes, &dry))
        return NULL;
    PyObject *result = NULL, *columns = NULL, *terminator = NULL;
    int64_t *sizes = NULL, *lens = NULL;
    Py_ssize_t *nulls = NULL, *starts = NULL;
    if (ncols < 1 || seq < 0 || seq > 255 || max_rows < 0 || max_bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "parse: columns >= 1, seq 0..255, limits >= 0");
        goto done;
    }
    sizes = calloc((size_t)ncols, sizeof *sizes);
    lens = calloc((size_t)ncols, sizeof *lens);
    nulls = calloc((size_t)ncols, sizeof *nulls);
    starts = calloc((size_t)ncols, sizeof *starts);
    if (!sizes || !lens || !nulls || !starts) {
        PyErr_NoMemory();
        goto done;
    }
    Reader r = {view.buf, view.len, 0, seq, {0}};
    Scan s;
    int got;
    Py_BEGIN_ALLOW_THREADS
    got = scan(&r, ncols, max_rows, max_bytes, sizes, nulls, starts, lens, &s);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        PyErr_SetString(PyExc_ValueError, r.error);
        goto done;
    }
    if (dry) {
        columns = Py_None;
        Py_INCREF(columns);
    } else {
        Reader again = {view.buf, view.len, 0, seq, {0}};
        columns = columns_of(&again, ncols, s.rows, sizes, nulls, starts, lens);
        if (columns == NULL)
            goto done;
    }
    if (s.end != END_NONE) {
        terminator = PyBytes_FromStringAndSize((const char *)r.buf + s.end_at, s.end_size);
        if (terminator == NULL)
            goto done;
    } else {
        terminator = Py_None;
        Py_INCREF(terminator);
    }
    result = Py_BuildValue("(nninNnN)", r.pos, s.rows, r.seq, s.end, terminator,
                           got == 0 ? s.need : (Py_ssize_t)0, columns);
    terminator = columns = NULL;  /* stolen by N */
done:
    Py_XDECREF(columns);
    Py_XDECREF(terminator);
    free(sizes);
    free(lens);
    free(nulls);
    free(starts);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", parse, METH_VARARGS, parse_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_textrows",
    "Text-protocol row packets -> Arrow binary column buffers (libs/snapshot/row_stream.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__textrows(void) { return PyModule_Create(&module); }
