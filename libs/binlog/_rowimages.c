/* Row images (WL#5092) of a rows event -> the same Python values as the generated decoders of
 * libs/binlog/rows_images.py, with no Python call per row or per value (libs/binlog/rows_core.py
 * builds the plans and holds the contract; rows.py calls read_changes).
 *
 *   image := NULL bitmap over the present columns (bit k of byte k / 8), then the values of the
 *            present non-NULL columns in column order (rows_event.h).
 *
 * An image plan is the tuple (ops: bytes, keys: tuple[int], calls: tuple): one 4-byte op per
 * present column (kind, a, b, unused), the row dict's key of each, and for OP_CALL columns the
 * Python decoder `decode(buf, pos) -> (value, pos)` to call.
 *
 * Every read is bounds-checked against the end of the body. Anything this core cannot decode
 * (a value past the end, an impossible DECIMAL group or fraction, a callback that fails, more
 * rows than allowed) raises ValueError, and the caller decodes the event again with the Python
 * decoders, which raise the reference error: one error contract, owned by the Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    OP_INT = 1,        /* signed little-endian, a = width 1-8 */
    OP_UINT = 2,       /* unsigned little-endian, a = width 1-8 (also ENUM, SET) */
    OP_UINT_BE = 3,    /* unsigned big-endian, a = width 1-8 (BIT) */
    OP_FLOAT = 4,
    OP_DOUBLE = 5,
    OP_BYTES = 6,      /* a = length-prefix width 1-4 */
    OP_DECIMAL = 7,    /* a = precision, b = scale */
    OP_DATETIME2 = 8,  /* a = fsp */
    OP_TIMESTAMP2 = 9, /* a = fsp */
    OP_YEAR = 10,
    OP_DATE = 11,
    OP_CALL = 12,
};

enum { KIND_INSERT = 0, KIND_UPDATE = 1, KIND_DELETE = 2 };

static const int FRAC_BYTES[7] = {0, 1, 1, 2, 2, 3, 3};
static const int FRAC_UNIT[4] = {0, 10000, 100, 1}; /* by fraction bytes (temporal.py) */
static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                   100000000, 1000000000};
#define DATETIMEF_INT_OFS 0x8000000000ll
/* DECIMAL(255, s): at most 29 groups of 4 bytes; 255 digits of text plus sign and point */
#define DECIMAL_MAX_BYTES 160
#define DECIMAL_MAX_TEXT 300

static PyObject *Decimal; /* decimal.Decimal */

typedef struct {
    const uint8_t *ops;
    PyObject *keys;  /* tuple */
    PyObject *calls; /* tuple */
    Py_ssize_t n;
} Plan;

typedef struct {
    PyObject *body; /* the bytes object (passed to OP_CALL decoders) */
    const uint8_t *buf;
    Py_ssize_t end;
    Py_ssize_t pos;
} Cursor;

static int fail(const char *what, Py_ssize_t pos) {
    PyErr_Format(PyExc_ValueError, "%s at byte %zd", what, pos);
    return -1;
}

static int plan_of(PyObject *obj, Plan *plan) {
    PyObject *ops, *keys, *calls;
    if (!PyTuple_Check(obj) || PyTuple_Size(obj) != 3) {
        PyErr_SetString(PyExc_TypeError, "an image plan is (ops, keys, calls)");
        return -1;
    }
    ops = PyTuple_GetItem(obj, 0);
    keys = PyTuple_GetItem(obj, 1);
    calls = PyTuple_GetItem(obj, 2);
    if (!PyBytes_Check(ops) || !PyTuple_Check(keys) || !PyTuple_Check(calls) ||
        PyBytes_Size(ops) != 4 * PyTuple_Size(keys) || PyTuple_Size(calls) != PyTuple_Size(keys)) {
        PyErr_SetString(PyExc_TypeError, "an image plan is (bytes of 4 per column, keys, calls)");
        return -1;
    }
    plan->ops = (const uint8_t *)PyBytes_AsString(ops);
    plan->keys = keys;
    plan->calls = calls;
    plan->n = PyTuple_Size(keys);
    return 0;
}

static uint64_t le_uint(const uint8_t *p, int width) {
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t be_uint(const uint8_t *p, int width) {
    uint64_t v = 0;
    for (int i = 0; i < width; i++)
        v = v << 8 | p[i];
    return v;
}

/* `value` in decimal, at least `digits` wide (zero-padded); returns the characters written. */
static int put_uint(char *out, uint64_t value, int digits) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    while (n < digits)
        tmp[n++] = '0';
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* '.' and fsp digits of `usec` microseconds (temporal._frac_text) */
static int put_fraction(char *out, uint32_t usec, int fsp) {
    out[0] = '.';
    return 1 + put_uint(out + 1, usec / POW10[6 - fsp], fsp);
}

static PyObject *ascii(const char *text, int n) { return PyUnicode_FromStringAndSize(text, n); }

/* The zero-padded integer digits text[start:n] as str(int) writes them (no leading zeros, "0"
 * for none); returns the new end. */
static int int_part_text(char *text, int start, int n) {
    int first = start;
    if (n == start) {
        text[n] = '0';
        return n + 1;
    }
    while (first < n - 1 && text[first] == '0')
        first++;
    memmove(text + start, text + first, (size_t)(n - first));
    return n - (first - start);
}

/* decimal_codec: digit groups of 9 digits in 4 big-endian bytes, the integer part's leftover
 * digits first and the fraction's last; the first bit flipped, negative values inverted. */
static PyObject *read_decimal(Cursor *c, int precision, int scale) {
    int intg = precision - scale, nints = 0, nfracs = 0;
    int groups[64][2]; /* (bytes, digits), integer part then fraction */
    if (precision == 0 || intg < 0) {
        PyErr_Format(PyExc_ValueError, "DECIMAL(%d,%d) impossible", precision, scale);
        return NULL;
    }
    if (intg % 9) {
        groups[nints][0] = DIG2BYTES[intg % 9];
        groups[nints++][1] = intg % 9;
    }
    for (int i = 0; i < intg / 9; i++) {
        groups[nints][0] = 4;
        groups[nints++][1] = 9;
    }
    for (int i = 0; i < scale / 9; i++) {
        groups[nints + nfracs][0] = 4;
        groups[nints + nfracs++][1] = 9;
    }
    if (scale % 9) {
        groups[nints + nfracs][0] = DIG2BYTES[scale % 9];
        groups[nints + nfracs++][1] = scale % 9;
    }
    int size = 0;
    for (int i = 0; i < nints + nfracs; i++)
        size += groups[i][0];
    if (size == 0 || size > DECIMAL_MAX_BYTES) {
        PyErr_Format(PyExc_ValueError, "DECIMAL(%d,%d) not decodable here", precision, scale);
        return NULL;
    }
    if (c->end - c->pos < size) {
        fail("DECIMAL past the end", c->pos);
        return NULL;
    }
    uint8_t raw[DECIMAL_MAX_BYTES];
    memcpy(raw, c->buf + c->pos, (size_t)size);
    int negative = !(raw[0] & 0x80);
    raw[0] ^= 0x80;
    if (negative)
        for (int i = 0; i < size; i++)
            raw[i] ^= 0xFF;
    char text[DECIMAL_MAX_TEXT];
    int n = 0, at = 0;
    if (negative)
        text[n++] = '-';
    int digits_start = n;
    for (int g = 0; g < nints + nfracs; g++) {
        uint32_t chunk = (uint32_t)be_uint(raw + at, groups[g][0]);
        at += groups[g][0];
        if (chunk >= POW10[groups[g][1]]) {
            fail("DECIMAL digit group out of range", c->pos);
            return NULL;
        }
        if (g == nints) {
            n = int_part_text(text, digits_start, n);
            text[n++] = '.';
        }
        n += put_uint(text + n, chunk, groups[g][1]);
    }
    if (!nfracs)
        n = int_part_text(text, digits_start, n);
    c->pos += size;
    PyObject *s = ascii(text, n);
    if (s == NULL)
        return NULL;
    PyObject *value = PyObject_CallFunctionObjArgs(Decimal, s, NULL);
    Py_DECREF(s);
    return value;
}

/* my_datetime_packed_from_binary (temporal.make_datetime2's text) */
static PyObject *read_datetime2(Cursor *c, int fsp) {
    int nfrac = FRAC_BYTES[fsp];
    if (c->end - c->pos < 5 + nfrac) {
        fail("DATETIME2 past the end", c->pos);
        return NULL;
    }
    const uint8_t *p = c->buf + c->pos;
    int64_t packed = (int64_t)be_uint(p, 5) - DATETIMEF_INT_OFS;
    if (packed < 0) {
        fail("negative DATETIME2 value", c->pos);
        return NULL;
    }
    int64_t ymd = packed >> 17, hms = packed & 0x1FFFF, ym = ymd >> 5;
    char text[48];
    int n = put_uint(text, (uint64_t)(ym / 13), 4);
    text[n++] = '-';
    n += put_uint(text + n, (uint64_t)(ym % 13), 2);
    text[n++] = '-';
    n += put_uint(text + n, (uint64_t)(ymd & 31), 2);
    text[n++] = ' ';
    n += put_uint(text + n, (uint64_t)(hms >> 12), 2);
    text[n++] = ':';
    n += put_uint(text + n, (uint64_t)((hms >> 6) & 63), 2);
    text[n++] = ':';
    n += put_uint(text + n, (uint64_t)(hms & 63), 2);
    if (fsp) {
        /* the fraction is signed (from_bytes(..., signed=True)) and must be 0..999999 */
        int64_t frac = (int64_t)be_uint(p + 5, nfrac);
        if (frac >> (8 * nfrac - 1))
            frac -= (int64_t)1 << (8 * nfrac);
        int64_t usec = frac * FRAC_UNIT[nfrac];
        if (usec < 0 || usec >= 1000000) {
            fail("DATETIME2 fraction out of range", c->pos);
            return NULL;
        }
        n += put_fraction(text + n, (uint32_t)usec, fsp);
    }
    c->pos += 5 + nfrac;
    return ascii(text, n);
}

/* my_timestamp_from_binary: 4-byte big-endian seconds, then the fraction bytes (unsigned) */
static PyObject *read_timestamp2(Cursor *c, int fsp) {
    int nfrac = FRAC_BYTES[fsp];
    if (c->end - c->pos < 4 + nfrac) {
        fail("TIMESTAMP2 past the end", c->pos);
        return NULL;
    }
    const uint8_t *p = c->buf + c->pos;
    char text[32];
    int n = put_uint(text, be_uint(p, 4), 1);
    if (fsp) {
        uint64_t usec = be_uint(p + 4, nfrac) * (uint64_t)FRAC_UNIT[nfrac];
        if (usec >= 1000000) {
            fail("TIMESTAMP2 fraction out of range", c->pos);
            return NULL;
        }
        n += put_fraction(text + n, (uint32_t)usec, fsp);
    }
    c->pos += 4 + nfrac;
    return ascii(text, n);
}

static PyObject *read_call(Cursor *c, PyObject *decode) {
    PyObject *at = PyLong_FromSsize_t(c->pos);
    if (at == NULL)
        return NULL;
    PyObject *out = PyObject_CallFunctionObjArgs(decode, c->body, at, NULL);
    Py_DECREF(at);
    if (out == NULL)
        return NULL;
    if (!PyTuple_Check(out) || PyTuple_Size(out) != 2 || !PyLong_Check(PyTuple_GetItem(out, 1))) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "a column decoder returns (value, pos)");
        return NULL;
    }
    Py_ssize_t next = PyLong_AsSsize_t(PyTuple_GetItem(out, 1));
    if (next == -1 && PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    if (next < c->pos || next > c->end) {
        Py_DECREF(out);
        fail("column value past the end", c->pos);
        return NULL;
    }
    PyObject *value = PyTuple_GetItem(out, 0);
    Py_INCREF(value);
    Py_DECREF(out);
    c->pos = next;
    return value;
}

static PyObject *read_value(Cursor *c, const uint8_t *op, PyObject *call) {
    int a = op[1];
    const uint8_t *p = c->buf + c->pos;
    Py_ssize_t left = c->end - c->pos;
    if ((op[0] == OP_INT || op[0] == OP_UINT || op[0] == OP_UINT_BE || op[0] == OP_BYTES) &&
        (a < 1 || a > 8)) {
        PyErr_Format(PyExc_ValueError, "integer width %d", a);
        return NULL;
    }
    switch (op[0]) {
    case OP_INT: {
        if (left < a)
            break;
        uint64_t v = le_uint(p, a);
        if (a < 8 && v >> (8 * a - 1))
            v |= ~(uint64_t)0 << (8 * a); /* sign-extend */
        c->pos += a;
        return PyLong_FromLongLong((long long)v);
    }
    case OP_UINT:
        if (left < a)
            break;
        c->pos += a;
        return PyLong_FromUnsignedLongLong(le_uint(p, a));
    case OP_UINT_BE:
        if (left < a)
            break;
        c->pos += a;
        return PyLong_FromUnsignedLongLong(be_uint(p, a));
    case OP_FLOAT: {
        if (left < 4)
            break;
        uint32_t bits = (uint32_t)le_uint(p, 4);
        float f;
        memcpy(&f, &bits, 4);
        c->pos += 4;
        return PyFloat_FromDouble((double)f);
    }
    case OP_DOUBLE: {
        if (left < 8)
            break;
        uint64_t bits = le_uint(p, 8);
        double d;
        memcpy(&d, &bits, 8);
        c->pos += 8;
        return PyFloat_FromDouble(d);
    }
    case OP_BYTES: {
        if (left < a)
            break;
        uint64_t size = le_uint(p, a);
        if (size > (uint64_t)(left - a))
            break;
        c->pos += a + (Py_ssize_t)size;
        return PyBytes_FromStringAndSize((const char *)p + a, (Py_ssize_t)size);
    }
    case OP_DECIMAL:
        return read_decimal(c, a, op[2]);
    case OP_DATETIME2:
    case OP_TIMESTAMP2:
        if (a > 6) {
            PyErr_Format(PyExc_ValueError, "fractional seconds precision %d", a);
            return NULL;
        }
        return op[0] == OP_DATETIME2 ? read_datetime2(c, a) : read_timestamp2(c, a);
    case OP_YEAR:
        if (left < 1)
            break;
        c->pos += 1;
        return PyLong_FromLong(p[0] ? p[0] + 1900 : 0);
    case OP_DATE: {
        if (left < 3)
            break;
        uint32_t v = (uint32_t)le_uint(p, 3);
        char text[16];
        int n = put_uint(text, v >> 9, 4);
        text[n++] = '-';
        n += put_uint(text + n, (v >> 5) & 15, 2);
        text[n++] = '-';
        n += put_uint(text + n, v & 31, 2);
        c->pos += 3;
        return ascii(text, n);
    }
    case OP_CALL:
        return read_call(c, call);
    default:
        PyErr_Format(PyExc_TypeError, "unknown image op %d", op[0]);
        return NULL;
    }
    fail("column value past the end", c->pos);
    return NULL;
}

/* One image at c->pos: the row dict {ordinal: value} of the present columns. */
static PyObject *read_image(Cursor *c, const Plan *plan) {
    Py_ssize_t nbytes = (plan->n + 7) >> 3;
    if (c->end - c->pos < nbytes) {
        fail("NULL bitmap past the end", c->pos);
        return NULL;
    }
    const uint8_t *nulls = c->buf + c->pos;
    c->pos += nbytes;
    PyObject *row = PyDict_New();
    if (row == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < plan->n; k++) {
        PyObject *value;
        if (nulls[k >> 3] >> (k & 7) & 1) {
            value = Py_None;
            Py_INCREF(value);
        } else {
            value = read_value(c, plan->ops + 4 * k, PyTuple_GetItem(plan->calls, k));
            if (value == NULL) {
                Py_DECREF(row);
                return NULL;
            }
        }
        int bad = PyDict_SetItem(row, PyTuple_GetItem(plan->keys, k), value);
        Py_DECREF(value);
        if (bad) {
            Py_DECREF(row);
            return NULL;
        }
    }
    return row;
}

static int cursor_of(Cursor *c, PyObject *body, PyObject *pos) {
    if (!PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "row images are read from bytes");
        return -1;
    }
    c->body = body;
    c->buf = (const uint8_t *)PyBytes_AsString(body);
    c->end = PyBytes_Size(body);
    c->pos = PyLong_AsSsize_t(pos);
    if (c->pos == -1 && PyErr_Occurred())
        return -1;
    if (c->pos < 0 || c->pos > c->end) {
        PyErr_SetString(PyExc_ValueError, "position outside the body");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(decode_image_doc,
"decode_image(plan, body: bytes, pos: int) -> (row dict, pos): one row image.");

static PyObject *decode_image(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Plan plan;
    Cursor c;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_image(plan, body, pos)");
        return NULL;
    }
    if (plan_of(args[0], &plan) < 0 || cursor_of(&c, args[1], args[2]) < 0)
        return NULL;
    PyObject *row = read_image(&c, &plan);
    if (row == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(Nn)", row, c.pos);
    return out;
}

PyDoc_STRVAR(read_changes_doc,
"read_changes(kind, first, second, make, body, pos, max_rows) -> list of make(before, after).\n"
"\n"
"kind 0 insert (first = after image), 1 update (first before, second after), 2 delete\n"
"(first = before image); row images from pos to the end of body. max_rows >= 0: more changes\n"
"than that raise ValueError (-1: no count).");

static PyObject *read_changes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Plan first, second;
    Cursor c;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "read_changes(kind, first, second, make, body, pos, max_rows)");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    Py_ssize_t max_rows = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred())
        return NULL;
    if (kind < KIND_INSERT || kind > KIND_DELETE) {
        PyErr_SetString(PyExc_ValueError, "kind is 0 (insert), 1 (update) or 2 (delete)");
        return NULL;
    }
    if (plan_of(args[1], &first) < 0 || (kind == KIND_UPDATE && plan_of(args[2], &second) < 0) ||
        cursor_of(&c, args[4], args[5]) < 0)
        return NULL;
    PyObject *make = args[3];
    PyObject *changes = PyList_New(0);
    if (changes == NULL)
        return NULL;
    while (c.pos < c.end) {
        Py_ssize_t start = c.pos;
        PyObject *before = NULL, *after = NULL, *change;
        PyObject *image = read_image(&c, &first);
        if (image == NULL)
            goto error;
        if (kind == KIND_UPDATE) {
            before = image;
            after = read_image(&c, &second);
            if (after == NULL) {
                Py_DECREF(before);
                goto error;
            }
        } else if (kind == KIND_INSERT) {
            after = image;
        } else {
            before = image;
        }
        change = PyObject_CallFunctionObjArgs(make, before ? before : Py_None,
                                              after ? after : Py_None, NULL);
        Py_XDECREF(before);
        Py_XDECREF(after);
        if (change == NULL)
            goto error;
        int bad = PyList_Append(changes, change);
        Py_DECREF(change);
        if (bad)
            goto error;
        if (c.pos == start) { /* an image of no column: it would never advance */
            fail("row image of no bytes", c.pos);
            goto error;
        }
        if (max_rows >= 0 && PyList_Size(changes) > max_rows) {
            fail("more row changes than max_rows", c.pos);
            goto error;
        }
    }
    return changes;
error:
    Py_DECREF(changes);
    return NULL;
}

static PyMethodDef methods[] = {
    {"decode_image", (PyCFunction)(void (*)(void))decode_image, METH_FASTCALL, decode_image_doc},
    {"read_changes", (PyCFunction)(void (*)(void))read_changes, METH_FASTCALL, read_changes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rowimages",
    "Row images of rows events decoded in C (libs/binlog/rows_core.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__rowimages(void) {
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL)
        return NULL;
    Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (Decimal == NULL)
        return NULL;
    return PyModule_Create(&module);
}
