/* The constructors of the codec's immutable records (libs/binlog/fastrec.py), for fastrec.py
 * and for the frame shell in _frames.c.
 *
 * constructor(cls, descriptors) -> make(*values): a slotted record built by setting its slots
 * through their member descriptors, as object.__new__ and the descriptors' __set__ would,
 * without a Python frame (fastrec.py holds the contract).
 */
#include "_frames.h"
#include <stdio.h>
#include <stdlib.h>

PyObject *frames_build(const Maker *m, PyObject *const *values) {
    PyObject *obj = m->alloc(m->cls, 0);
    if (obj == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < m->n; i++) {
        if (m->set[i](m->descrs[i], obj, values[i]) < 0) {
            Py_DECREF(obj);
            return NULL;
        }
    }
    return obj;
}

static PyObject *make(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const Maker *m = PyCapsule_GetPointer(self, MAKER_CAPSULE);
    if (m == NULL)
        return NULL;
    if (nargs != m->n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments but %zd were given",
                     m->name, m->n, nargs);
        return NULL;
    }
    return frames_build(m, args);
}

static void maker_free(PyObject *capsule) {
    Maker *m = PyCapsule_GetPointer(capsule, MAKER_CAPSULE);
    for (Py_ssize_t i = 0; i < m->n; i++)
        Py_DECREF(m->descrs[i]);
    Py_DECREF((PyObject *)m->cls);
    free(m->descrs);
    free(m->set);
    free(m);
}

Maker *frames_maker_of(PyObject *function) {
    PyObject *self = PyCFunction_GetSelf(function);
    if (self == NULL || !PyCapsule_IsValid(self, MAKER_CAPSULE)) {
        PyErr_SetString(PyExc_TypeError, "not a record constructor of this module");
        return NULL;
    }
    return PyCapsule_GetPointer(self, MAKER_CAPSULE);
}

const char frames_constructor_doc[] = PyDoc_STR(
"constructor(cls, descriptors: tuple) -> make(*values): a new cls with each slot descriptor set\n"
"to its value, in order (fastrec.fast_constructor checks what cls and descriptors are).");

PyObject *frames_constructor(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "constructor(cls, descriptors: tuple)");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    Py_ssize_t n = PyTuple_Size(args[1]);
    Maker *m = calloc(1, sizeof(Maker));
    if (m == NULL)
        return PyErr_NoMemory();
    m->descrs = calloc(n ? n : 1, sizeof(PyObject *));
    m->set = calloc(n ? n : 1, sizeof(descrsetfunc));
    m->alloc = (allocfunc)PyType_GetSlot(cls, Py_tp_alloc);
    if (m->descrs == NULL || m->set == NULL || m->alloc == NULL) {
        free(m->descrs);
        free(m->set);
        free(m);
        return PyErr_NoMemory();
    }
    Py_INCREF(args[0]);
    m->cls = cls;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GetItem(args[1], i);
        m->set[i] = (descrsetfunc)PyType_GetSlot(Py_TYPE(d), Py_tp_descr_set);
        Py_INCREF(d);
        m->descrs[i] = d;
        m->n = i + 1;
        if (m->set[i] == NULL) {
            PyErr_SetString(PyExc_TypeError, "a descriptor without __set__");
            goto error;
        }
    }
    m->n = n;
    PyObject *qualname = PyType_GetName(cls);
    if (qualname == NULL)
        goto error;
    const char *cname = PyUnicode_AsUTF8AndSize(qualname, NULL);
    if (cname == NULL) {
        Py_DECREF(qualname);
        goto error;
    }
    snprintf(m->name, sizeof m->name, "make_%s", cname);
    Py_DECREF(qualname);
    m->def.ml_name = m->name;
    m->def.ml_meth = (PyCFunction)(void (*)(void))make;
    m->def.ml_flags = METH_FASTCALL;
    PyObject *capsule = PyCapsule_New(m, MAKER_CAPSULE, maker_free);
    if (capsule == NULL)
        goto error;
    PyObject *module_name = PyModule_GetNameObject(module);
    PyObject *function = module_name ? PyCFunction_NewEx(&m->def, capsule, module_name) : NULL;
    Py_XDECREF(module_name);
    Py_DECREF(capsule);
    return function;
error:
    for (Py_ssize_t i = 0; i < m->n; i++)
        Py_DECREF(m->descrs[i]);
    Py_DECREF(args[0]);
    free(m->descrs);
    free(m->set);
    free(m);
    return NULL;
}
