/*
 * What the two files of the CPython module chrf_core._kernel share: module.c (counting, the module) and
 * module_mbr.c (the minimum Bayes risk entry points, pairwise and aggregate).
 */
#ifndef CHRF_MODULE_H
#define CHRF_MODULE_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Nonzero when a signal handler raised (Ctrl-C: KeyboardInterrupt), which then stays set. */
int signalled(void *context);

extern const char pairwise_doc[], aggregate_doc[];
PyObject *pairwise(PyObject *module, PyObject *args);
PyObject *aggregate(PyObject *module, PyObject *args);

#endif
