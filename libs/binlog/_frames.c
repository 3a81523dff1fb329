/* The frame shell of libs/binlog/framing.decode_event in C, and the constructors of the codec's
 * immutable records (libs/binlog/fastrec.py), which are in _frames_records.c (_frames.h).
 *
 * event(frame, pos, ctx, verify_checksum, checksum, file) is decode_event's common case: the
 * 19-byte common header (binlog_event.h Log_event_header), the CRC32 check, the body slice, the
 * registry's decoder, the Table_map remembered in the context, the Header and Event records. It
 * returns None for everything else and for every frame it would have to reject (a size that
 * does not match, a bad CRC, no Format_description yet, a Format_description or Start_v3 that
 * restarts the context, an artificial Rotate, pre-GA type codes, a type without a decoder, a
 * decoder that raises): framing.py then decodes the frame with the Python shell, whose result
 * or error is the codec's. Decoders are pure functions of (header, body, ctx), so running one
 * again there gives the same error.
 */
#include "_frames.h"
#include <stdint.h>
#include <string.h>

/* binlog_event.h */
#define HEADER_LEN 19
#define CHECKSUM_LEN 4
#define START_V3 1
#define ROTATE 4
#define FORMAT_DESCRIPTION 15
#define TABLE_MAP 19
#define LOG_EVENT_ARTIFICIAL_F 0x20
/* zlib.crc32 of a message followed by its own CRC32 (little endian) is this constant, so the
 * whole frame is checked in one call and without slicing off its trailer. */
#define CRC32_RESIDUE 0x2144DF1Cul

/* ---- the frame shell ------------------------------------------------------------------------ */

static const Maker *HeaderMaker, *EventMaker;
static PyObject *Makers;  /* keeps the two constructors (and their Makers) alive */
static PyObject *ContextType, *FdeType, *Codecs, *Crc32Alg, *crc32;
static PyObject *s_fde, *s_checksum_alg, *s_table_maps, *s_table_id, *s_file;

PyDoc_STRVAR(configure_doc,
"configure(make_header, make_event, DecodeContext, FormatDescription, codecs, crc32_alg)\n"
"\n"
"What event() builds and reads: the Header and Event constructors (constructor()), the\n"
"context class and the Format_description record class it handles (exactly those types), the\n"
"registry {type code: (decoder, encoder)} and the checksum_alg value meaning CRC32.");

static void replace(PyObject **slot, PyObject *value) {
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6 || !PyType_Check(args[2]) || !PyType_Check(args[3]) || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "configure(make_header, make_event, DecodeContext, "
                                         "FormatDescription, codecs: dict, crc32_alg)");
        return NULL;
    }
    const Maker *header = frames_maker_of(args[0]), *event = frames_maker_of(args[1]);
    if (header == NULL || event == NULL)
        return NULL;
    if (header->n != 6 || event->n != 5) {
        PyErr_SetString(PyExc_TypeError, "Header has 6 fields, Event 5");
        return NULL;
    }
    PyObject *makers = PyTuple_Pack(2, args[0], args[1]);
    if (makers == NULL)
        return NULL;
    replace(&Makers, makers);
    HeaderMaker = header;
    EventMaker = event;
    replace(&ContextType, Py_NewRef(args[2]));
    replace(&FdeType, Py_NewRef(args[3]));
    replace(&Codecs, Py_NewRef(args[4]));
    replace(&Crc32Alg, Py_NewRef(args[5]));
    Py_RETURN_NONE;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1 when the frame's trailer is the CRC32 of the rest, 0 when not, -1 on an error. */
static int crc_matches(PyObject *frame) {
    PyObject *crc = PyObject_CallFunctionObjArgs(crc32, frame, NULL);
    if (crc == NULL)
        return -1;
    unsigned long value = PyLong_AsUnsignedLong(crc);
    Py_DECREF(crc);
    if (value == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    return value == CRC32_RESIDUE;
}

/* Whether the stream carries CRC32 trailers (DecodeContext.has_checksum, fde known). */
static int context_checksum(PyObject *fde) {
    PyObject *alg = PyObject_GetAttr(fde, s_checksum_alg);
    if (alg == NULL)
        return -1;
    int crc = PyObject_RichCompareBool(alg, Crc32Alg, Py_EQ);
    Py_DECREF(alg);
    return crc;
}

/* The decoder's record; NULL with no exception set when it raised an Exception (the Python
 * shell decodes the frame again and reports the error). */
static PyObject *decode_body(PyObject *decoder, PyObject *header, const uint8_t *buf,
                             Py_ssize_t end, PyObject *ctx) {
    PyObject *body = PyBytes_FromStringAndSize((const char *)buf + HEADER_LEN, end - HEADER_LEN);
    if (body == NULL)
        return NULL;
    PyObject *record = PyObject_CallFunctionObjArgs(decoder, header, body, ctx, NULL);
    Py_DECREF(body);
    if (record == NULL && PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear();
    return record;
}

/* ctx.table_maps[record.table_id] = record, as decode_event does for a Table_map. */
static int remember_table_map(PyObject *ctx, PyObject *record) {
    PyObject *table_id = PyObject_GetAttr(record, s_table_id);
    if (table_id == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int bad = 0;
    if (table_id != Py_None) {
        PyObject *maps = PyObject_GetAttr(ctx, s_table_maps);
        bad = maps == NULL || PyObject_SetItem(maps, table_id, record) < 0;
        Py_XDECREF(maps);
    }
    Py_DECREF(table_id);
    return bad ? -1 : 0;
}

PyDoc_STRVAR(event_doc,
"event(frame, pos, ctx, verify_checksum, checksum, file) -> Event, or None: decode_event's\n"
"common case (see the module comment); None leaves the frame to the Python shell.");

static PyObject *event(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "event(frame, pos, ctx, verify_checksum, checksum, file)");
        return NULL;
    }
    if (Codecs == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_frames.configure() was not called");
        return NULL;
    }
    PyObject *frame = args[0], *pos = args[1], *ctx = args[2], *checksum = args[4];
    PyObject *file = args[5];
    if (!PyBytes_Check(frame) || Py_TYPE(ctx) != (PyTypeObject *)ContextType)
        Py_RETURN_NONE;
    const uint8_t *buf = (const uint8_t *)PyBytes_AsString(frame);
    Py_ssize_t n = PyBytes_Size(frame);
    if (n < HEADER_LEN || le32(buf + 9) != (uint64_t)n)
        Py_RETURN_NONE;
    unsigned type_code = buf[4], flags = buf[17] | buf[18] << 8;
    if (type_code == FORMAT_DESCRIPTION || type_code == START_V3)
        Py_RETURN_NONE;
    PyObject *fde = PyObject_GetAttr(ctx, s_fde);
    if (fde == NULL)
        return NULL;
    int has_crc;
    if (Py_TYPE(fde) != (PyTypeObject *)FdeType) /* none yet, or pre-GA type codes */
        has_crc = -2;
    else if (checksum != Py_None)
        has_crc = PyObject_IsTrue(checksum);
    else if (type_code == ROTATE && flags & LOG_EVENT_ARTIFICIAL_F)
        has_crc = -2;
    else
        has_crc = context_checksum(fde);
    Py_DECREF(fde);
    if (has_crc == -1)
        return NULL;
    if (has_crc == -2)
        Py_RETURN_NONE;
    Py_ssize_t end = n;
    PyObject *checksum_ok = Py_None;
    if (has_crc) {
        end = n - CHECKSUM_LEN;
        if (end < HEADER_LEN)
            Py_RETURN_NONE;
        int verify = PyObject_IsTrue(args[3]);
        if (verify < 0)
            return NULL;
        if (verify) {
            int ok = crc_matches(frame);
            if (ok <= 0)
                return ok < 0 ? NULL : Py_NewRef(Py_None);
            checksum_ok = Py_True;
        }
    }
    PyObject *code = PyLong_FromUnsignedLong(type_code);
    if (code == NULL)
        return NULL;
    PyObject *entry = PyDict_GetItemWithError(Codecs, code); /* borrowed */
    if (entry == NULL || !PyTuple_Check(entry) || PyTuple_Size(entry) < 1) {
        Py_DECREF(code);
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    PyObject *fields[6] = {PyLong_FromUnsignedLong(le32(buf)), code,
                           PyLong_FromUnsignedLong(le32(buf + 5)),
                           PyLong_FromUnsignedLong((unsigned long)n),
                           PyLong_FromUnsignedLong(le32(buf + 13)), PyLong_FromUnsignedLong(flags)};
    PyObject *header = NULL, *decoder = NULL, *record = NULL, *result = NULL;
    for (int i = 0; i < 6; i++)
        if (fields[i] == NULL)
            goto done;
    header = frames_build(HeaderMaker, fields);
    if (header == NULL)
        goto done;
    decoder = PyTuple_GetItem(entry, 0);
    Py_XINCREF(decoder); /* the registry only lends it, and the call may change the registry */
    record = decoder ? decode_body(decoder, header, buf, end, ctx) : NULL;
    if (record == NULL) {
        if (!PyErr_Occurred())
            result = Py_NewRef(Py_None);
        goto done;
    }
    if (type_code == TABLE_MAP && remember_table_map(ctx, record) < 0)
        goto done;
    if (file == Py_None) {
        file = PyObject_GetAttr(ctx, s_file);
        if (file == NULL)
            goto done;
    } else {
        Py_INCREF(file);
    }
    PyObject *values[5] = {header, pos, record, checksum_ok, file};
    result = frames_build(EventMaker, values);
    Py_DECREF(file);
done:
    for (int i = 0; i < 6; i++)
        Py_XDECREF(fields[i]);
    Py_XDECREF(header);
    Py_XDECREF(decoder);
    Py_XDECREF(record);
    return result;
}

static PyMethodDef methods[] = {
    {"constructor", (PyCFunction)(void (*)(void))frames_constructor, METH_FASTCALL,
     frames_constructor_doc},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL, configure_doc},
    {"event", (PyCFunction)(void (*)(void))event, METH_FASTCALL, event_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_frames",
    "decode_event's frame shell and the codec's record constructors in C (libs/binlog/framing.py, "
    "fastrec.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__frames(void) {
    PyObject *zlib = PyImport_ImportModule("zlib");
    if (zlib == NULL)
        return NULL;
    crc32 = PyObject_GetAttrString(zlib, "crc32");
    Py_DECREF(zlib);
    if (crc32 == NULL)
        return NULL;
    if (!(s_fde = PyUnicode_InternFromString("fde")) ||
        !(s_checksum_alg = PyUnicode_InternFromString("checksum_alg")) ||
        !(s_table_maps = PyUnicode_InternFromString("table_maps")) ||
        !(s_table_id = PyUnicode_InternFromString("table_id")) ||
        !(s_file = PyUnicode_InternFromString("file")))
        return NULL;
    return PyModule_Create(&module);
}
