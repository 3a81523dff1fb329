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
 *
 * The ops' value decoders are in _rowimages_values.c; what the two files share is in _rowimages.h.
 */
#include "_rowimages.h"

enum { KIND_INSERT = 0, KIND_UPDATE = 1, KIND_DELETE = 2 };

typedef struct {
    const uint8_t *ops;
    PyObject *keys;  /* tuple */
    PyObject *calls; /* tuple */
    Py_ssize_t n;
} Plan;

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

/* One image at c->pos: the row dict {ordinal: value} of the present columns. */
static PyObject *read_image(Cursor *c, const Plan *plan) {
    Py_ssize_t nbytes = (plan->n + 7) >> 3;
    if (c->end - c->pos < nbytes) {
        rowimages_fail("NULL bitmap past the end", c->pos);
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
            value = rowimages_read_value(c, plan->ops + 4 * k, PyTuple_GetItem(plan->calls, k));
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
            rowimages_fail("row image of no bytes", c.pos);
            goto error;
        }
        if (max_rows >= 0 && PyList_Size(changes) > max_rows) {
            rowimages_fail("more row changes than max_rows", c.pos);
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
    rowimages_Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (rowimages_Decimal == NULL)
        return NULL;
    return PyModule_Create(&module);
}
