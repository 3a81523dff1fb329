/* The value decoders of the row-image core: one present non-NULL column value by its plan op
 * (_rowimages.h), each the same Python value as the generated decoders of
 * libs/binlog/rows_images.py. The row images themselves are walked in _rowimages.c.
 */
#include "_rowimages.h"
#include <string.h>

static const int FRAC_BYTES[7] = {0, 1, 1, 2, 2, 3, 3};
static const int FRAC_UNIT[4] = {0, 10000, 100, 1}; /* by fraction bytes (temporal.py) */
static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                   100000000, 1000000000};
#define DATETIMEF_INT_OFS 0x8000000000ll
/* DECIMAL(255, s): at most 29 groups of 4 bytes; 255 digits of text plus sign and point */
#define DECIMAL_MAX_BYTES 160
#define DECIMAL_MAX_TEXT 300

PyObject *rowimages_Decimal; /* decimal.Decimal */

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
        rowimages_fail("DECIMAL past the end", c->pos);
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
            rowimages_fail("DECIMAL digit group out of range", c->pos);
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
    PyObject *value = PyObject_CallFunctionObjArgs(rowimages_Decimal, s, NULL);
    Py_DECREF(s);
    return value;
}

/* my_datetime_packed_from_binary (temporal.make_datetime2's text) */
static PyObject *read_datetime2(Cursor *c, int fsp) {
    int nfrac = FRAC_BYTES[fsp];
    if (c->end - c->pos < 5 + nfrac) {
        rowimages_fail("DATETIME2 past the end", c->pos);
        return NULL;
    }
    const uint8_t *p = c->buf + c->pos;
    int64_t packed = (int64_t)be_uint(p, 5) - DATETIMEF_INT_OFS;
    if (packed < 0) {
        rowimages_fail("negative DATETIME2 value", c->pos);
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
            rowimages_fail("DATETIME2 fraction out of range", c->pos);
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
        rowimages_fail("TIMESTAMP2 past the end", c->pos);
        return NULL;
    }
    const uint8_t *p = c->buf + c->pos;
    char text[32];
    int n = put_uint(text, be_uint(p, 4), 1);
    if (fsp) {
        uint64_t usec = be_uint(p + 4, nfrac) * (uint64_t)FRAC_UNIT[nfrac];
        if (usec >= 1000000) {
            rowimages_fail("TIMESTAMP2 fraction out of range", c->pos);
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
        rowimages_fail("column value past the end", c->pos);
        return NULL;
    }
    PyObject *value = PyTuple_GetItem(out, 0);
    Py_INCREF(value);
    Py_DECREF(out);
    c->pos = next;
    return value;
}

PyObject *rowimages_read_value(Cursor *c, const uint8_t *op, PyObject *call) {
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
    rowimages_fail("column value past the end", c->pos);
    return NULL;
}
