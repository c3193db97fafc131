/*
 * What the two files of the CPython module chrf_core._kernel share: module.c (counting, the module) and
 * module_mbr.c (the minimum Bayes risk entry point, batch: pairwise or aggregate).
 */
#ifndef CHRF_MODULE_H
#define CHRF_MODULE_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The glue's Pause (kernel.h), with the GIL held: nonzero when a signal handler raised (Ctrl-C: KeyboardInterrupt),
   which then stays set. */
static inline int signalled(void *context) {
    (void)context;
    return PyErr_CheckSignals() < 0;
}

extern const char batch_doc[], buffers_doc[], buffers_held_doc[];
PyObject *batch(PyObject *module, PyObject *args);
PyObject *buffers(PyObject *module, PyObject *args);
PyObject *buffers_held(PyObject *module, PyObject *capsule);

#endif
