/* What the two files of _frames share: the record constructors (_frames_records.c) that the
 * frame shell (_frames.c) builds its Header and Event with.
 */
#ifndef LIBS_BINLOG_FRAMES_H
#define LIBS_BINLOG_FRAMES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAKER_CAPSULE "libs.binlog._frames.maker"

typedef struct {
    PyMethodDef def; /* the Python function's: named make_<class> like fastrec's */
    char name[64];
    PyTypeObject *cls;
    allocfunc alloc;
    Py_ssize_t n;
    PyObject **descrs;
    descrsetfunc *set;
} Maker;

/* A new m->cls with its m->n slots set to values[0..n); NULL with an exception set. */
PyObject *frames_build(const Maker *m, PyObject *const *values);
/* The Maker of a function constructor() made; NULL with TypeError for any other. */
Maker *frames_maker_of(PyObject *function);

extern const char frames_constructor_doc[];
PyObject *frames_constructor(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
