/* What the two files of the row-image core share (the format and its error contract: the
 * comment of _rowimages.c): _rowimages.c walks the row images and is the module,
 * _rowimages_values.c decodes one column value by its plan op.
 */
#ifndef LIBS_BINLOG_ROWIMAGES_H
#define LIBS_BINLOG_ROWIMAGES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The kind byte of a plan's 4-byte op (kind, a, b, unused). */
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

typedef struct {
    PyObject *body; /* the bytes object (passed to OP_CALL decoders) */
    const uint8_t *buf;
    Py_ssize_t end;
    Py_ssize_t pos;
} Cursor;

static inline int rowimages_fail(const char *what, Py_ssize_t pos) {
    PyErr_Format(PyExc_ValueError, "%s at byte %zd", what, pos);
    return -1;
}

extern PyObject *rowimages_Decimal; /* decimal.Decimal (PyInit__rowimages sets it) */

/* The value of one present non-NULL column at c->pos by its op; `call` is the column's OP_CALL
 * decoder. Advances c->pos past the value; NULL with an exception set when it cannot. */
PyObject *rowimages_read_value(Cursor *c, const uint8_t *op, PyObject *call);

#endif
