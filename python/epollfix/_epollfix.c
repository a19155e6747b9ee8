/* epollfix._epollfix: exact deadlines from Python's epoll users to the library.
 *
 * CPython keeps a loop's deadline as a float until select.epoll.poll() rounds
 * it up to whole milliseconds; selectors.EpollSelector.select() rounds it up
 * even before, in Python. activate() puts a C method of the same calling
 * convention in place of select.epoll.poll that, for a positive timeout,
 * tells the library the exact one (epollfix_hint_ns) and then runs CPython's
 * own poll, unchanged: its argument checks, its EINTR retry (the library keeps
 * the hint for it), its result. EpollSelector.select is wrapped only to pass
 * its exact timeout down to that poll, which gets the rounded one.
 *
 * With the library preloaded, the hint goes to it and CPython's epoll_wait is
 * the library's. Without it, enable(path) loads the library and this module
 * makes the waits itself through epollfix_epoll_wait_ns (a dlopen'd library
 * cannot interpose CPython's epoll_wait).
 *
 * The patch is on the types of the interpreter that activates it (select's
 * types are per interpreter from 3.12); a subinterpreter keeps its own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

typedef int (*hint_fn)(int64_t);
typedef int (*wait_ns_fn)(int, struct epoll_event *, int, int64_t);

static hint_fn hint;       /* the library's, once found */
static wait_ns_fn wait_ns; /* set by enable(): this module makes the waits */

static PyTypeObject *epoll_type;
static PyMethodDef *orig_poll; /* CPython's, kept from the type's descriptor */
static PyObject *poll_descr;   /* the descriptor that was there */
static PyObject *selector_cls, *orig_select;

/* The exact timeout EpollSelector.select was given, for the poll it makes
 * next on this thread with that timeout rounded up; NAN: none. */
static _Thread_local double select_exact = NAN;

/* seconds -> ns for a finite positive timeout the library may take; -1 else. */
static int64_t exact_ns(PyObject *timeout)
{
	double t;
	if (PyFloat_CheckExact(timeout))
		t = PyFloat_AS_DOUBLE(timeout);
	else if (PyLong_CheckExact(timeout))
		t = PyLong_AsDouble(timeout);
	else
		return -1;
	if (t == -1.0 && PyErr_Occurred()) {
		PyErr_Clear();
		return -1;
	}
	if (!(t > 0) || t > 9.0e9) /* NaN, <= 0, or past int64 ns */
		return -1;
	if (!isnan(select_exact) && ceil(select_exact * 1e3) * 1e-3 == t)
		t = select_exact; /* the selector's rounding undone */
	return llround(t * 1e9);
}

/* poll(timeout=None, maxevents=-1): the timeout argument, or NULL. */
static PyObject *timeout_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	if (nargs > 0)
		return args[0];
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t i = 0; i < nkw; i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "timeout") == 0)
			return args[nargs + i];
	return NULL;
}

static PyObject *poll_own(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames, int64_t ns);

static PyObject *poll_exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			    PyObject *kwnames)
{
	PyObject *t = timeout_arg(args, nargs, kwnames);
	int64_t ns = t ? exact_ns(t) : -1;
	if (wait_ns)
		return poll_own(self, args, nargs, kwnames, ns);
	if (ns < 0 || !hint)
		return ((_PyCFunctionFastWithKeywords)(void (*)(void))orig_poll->ml_meth)(self, args,
											  nargs, kwnames);
	hint(ns);
	PyObject *r = ((_PyCFunctionFastWithKeywords)(void (*)(void))orig_poll->ml_meth)(self, args,
										 nargs, kwnames);
	if (!r) /* it raised before a wait took the hint, or during EINTR's retry */
		hint(-1);
	return r;
}

static PyMethodDef poll_def = { "poll", (PyCFunction)(void (*)(void))poll_exact,
				METH_FASTCALL | METH_KEYWORDS, NULL };

/* ---- The waits without the preload (enable) -------------------------------
 * CPython's select_epoll_poll_impl, with the wait through the library: the
 * same argument rules and messages, EINTR retried with the time left. */

/* An int argument, as CPython's argument clinic reads one. */
static int as_int(PyObject *o, int *out)
{
	long v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < INT_MIN || v > INT_MAX) {
		PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C int");
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static PyObject *poll_own(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames, int64_t exact)
{
	static const char *const names[] = { "timeout", "maxevents" };
	PyObject *given[2] = { Py_None, NULL };
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

	if (nargs > 2)
		return PyErr_Format(PyExc_TypeError, "poll() takes at most 2 arguments (%zd given)",
				    nargs + nkw);
	for (Py_ssize_t i = 0; i < nargs; i++)
		given[i] = args[i];
	for (Py_ssize_t i = 0; i < nkw; i++) {
		PyObject *k = PyTuple_GET_ITEM(kwnames, i);
		int j = PyUnicode_CompareWithASCIIString(k, names[0]) == 0   ? 0
			: PyUnicode_CompareWithASCIIString(k, names[1]) == 0 ? 1
									     : -1;
		if (j < 0) /* argument clinic's words, which 3.13 changed */
			return PyErr_Format(PyExc_TypeError,
#if PY_VERSION_HEX < 0x030D0000
					    "'%U' is an invalid keyword argument for poll()",
#else
					    "poll() got an unexpected keyword argument '%U'",
#endif
					    k);
		given[j] = args[nargs + i];
	}
	int64_t ns = -1; /* forever */
	if (given[0] != Py_None) {
		double t = PyFloat_AsDouble(given[0]);
		if (t == -1.0 && PyErr_Occurred()) {
			if (PyErr_ExceptionMatches(PyExc_TypeError))
				PyErr_SetString(PyExc_TypeError,
						"timeout must be an integer or None");
			return NULL;
		}
		if (t >= 0) /* else forever, as CPython */
			ns = exact >= 0 ? exact : t > 9.0e9 ? -1 : llround(ceil(t * 1e3) * 1e6);
	}
	int maxevents = -1;
	if (given[1] && as_int(given[1], &maxevents) != 0)
		return NULL;
	if (maxevents == -1)
		maxevents = FD_SETSIZE - 1;
	else if (maxevents < 1)
		return PyErr_Format(PyExc_ValueError, "maxevents must be greater than 0, got %d",
				    maxevents);
	PyObject *fileno = PyObject_CallMethod(self, "fileno", NULL);
	if (!fileno)
		return NULL;
	int epfd;
	int bad = as_int(fileno, &epfd);
	Py_DECREF(fileno);
	if (bad)
		return NULL;
	struct epoll_event *evs = PyMem_New(struct epoll_event, (size_t)maxevents);
	if (!evs)
		return PyErr_NoMemory();
	int64_t deadline = ns >= 0 ? mono_ns() + ns : 0;
	int n, err;
	for (;;) {
		Py_BEGIN_ALLOW_THREADS
		n = wait_ns(epfd, evs, maxevents, ns);
		err = errno;
		Py_END_ALLOW_THREADS
		if (n >= 0 || err != EINTR)
			break;
		if (PyErr_CheckSignals()) {
			PyMem_Free(evs);
			return NULL;
		}
		if (ns >= 0) { /* the time left, as CPython's own retry */
			ns = deadline - mono_ns();
			if (ns < 0)
				ns = 0;
		}
	}
	if (n < 0) {
		errno = err;
		PyMem_Free(evs);
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	PyObject *list = PyList_New(n);
	for (int i = 0; list && i < n; i++) {
		PyObject *item = Py_BuildValue("iI", evs[i].data.fd, evs[i].events);
		if (!item) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, item);
	}
	PyMem_Free(evs);
	return list;
}

/* ---- EpollSelector.select ---------------------------------------------------- */

static PyObject *select_exact_fn(PyObject *unused, PyObject *const *args, Py_ssize_t nargs,
				 PyObject *kwnames)
{
	(void)unused;
	/* (self, timeout=None), positional or by keyword */
	PyObject *t = nargs > 1 ? args[1] : NULL;
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t i = 0; !t && i < nkw; i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "timeout") == 0)
			t = args[nargs + i];
	double saved = select_exact;
	select_exact = t && PyFloat_CheckExact(t) ? PyFloat_AS_DOUBLE(t) : NAN;
	PyObject *r = PyObject_Vectorcall(orig_select, args, (size_t)nargs, kwnames);
	select_exact = saved;
	return r;
}

static PyMethodDef select_def = { "select", (PyCFunction)(void (*)(void))select_exact_fn,
				  METH_FASTCALL | METH_KEYWORDS, NULL };

/* ---- activate, deactivate, enable -------------------------------------------- */

static PyObject *activate(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	if (orig_poll)
		Py_RETURN_TRUE;
	if (!hint)
		hint = (hint_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_hint_ns");
	if (!hint && !wait_ns)
		Py_RETURN_FALSE; /* no library: nothing to say it to */
	PyObject *select = PyImport_ImportModule("select");
	if (!select)
		return NULL;
	PyObject *type = PyObject_GetAttrString(select, "epoll");
	Py_DECREF(select);
	if (!type) { /* no epoll here (gevent's patch_select removes it) */
		PyErr_Clear();
		Py_RETURN_FALSE;
	}
	PyObject *d = PyType_Check(type) ? PyDict_GetItemString(((PyTypeObject *)type)->tp_dict, "poll")
					 : NULL;
	if (!d || !PyObject_TypeCheck(d, &PyMethodDescr_Type) ||
	    ((PyMethodDescrObject *)d)->d_method->ml_flags != (METH_FASTCALL | METH_KEYWORDS)) {
		Py_DECREF(type);
		Py_RETURN_FALSE; /* not the poll this was written for */
	}
	PyMethodDef *orig = ((PyMethodDescrObject *)d)->d_method;
	poll_def.ml_doc = orig->ml_doc;
	PyObject *mine = PyDescr_NewMethod((PyTypeObject *)type, &poll_def);
	Py_INCREF(d);
	if (!mine || PyObject_SetAttrString(type, "poll", mine) != 0) {
		Py_XDECREF(mine);
		Py_DECREF(d);
		Py_DECREF(type);
		return NULL;
	}
	Py_DECREF(mine);
	epoll_type = (PyTypeObject *)type, orig_poll = orig, poll_descr = d;

	/* selectors.EpollSelector.select, when there is one to wrap. */
	PyObject *selectors = PyImport_ImportModule("selectors");
	PyObject *cls = selectors ? PyObject_GetAttrString(selectors, "EpollSelector") : NULL;
	PyObject *fn = cls ? PyObject_GetAttrString(cls, "select") : NULL;
	Py_XDECREF(selectors);
	if (fn && PyFunction_Check(fn)) {
		PyObject *c = PyCFunction_New(&select_def, NULL);
		PyObject *m = c ? PyInstanceMethod_New(c) : NULL;
		Py_XDECREF(c);
		if (m && PyObject_SetAttrString(cls, "select", m) == 0) {
			selector_cls = cls, orig_select = fn;
			cls = fn = NULL;
		}
		Py_XDECREF(m);
	}
	PyErr_Clear();
	Py_XDECREF(cls);
	Py_XDECREF(fn);
	Py_RETURN_TRUE;
}

static PyObject *deactivate(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	if (selector_cls) {
		PyObject_SetAttrString(selector_cls, "select", orig_select);
		Py_CLEAR(selector_cls);
		Py_CLEAR(orig_select);
	}
	if (orig_poll) {
		PyObject_SetAttrString((PyObject *)epoll_type, "poll", poll_descr);
		Py_CLEAR(poll_descr);
		Py_CLEAR(epoll_type);
		orig_poll = NULL;
	}
	wait_ns = NULL;
	PyErr_Clear();
	Py_RETURN_NONE;
}

/* enable(path): the library at path, loaded here, makes this module's waits. */
static PyObject *load(PyObject *mod, PyObject *path)
{
	(void)mod;
	if (hint && !wait_ns && dlsym(RTLD_DEFAULT, "epollfix_hint_ns"))
		Py_RETURN_FALSE; /* preloaded: its epoll_wait is already the one */
	PyObject *bytes;
	if (!PyUnicode_FSConverter(path, &bytes))
		return NULL;
	void *h = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_LOCAL);
	Py_DECREF(bytes);
	if (!h)
		return PyErr_Format(PyExc_OSError, "epollfix: %s", dlerror());
	hint_fn hf = (hint_fn)(uintptr_t)dlsym(h, "epollfix_hint_ns");
	wait_ns_fn wf = (wait_ns_fn)(uintptr_t)dlsym(h, "epollfix_epoll_wait_ns");
	if (!hf || !wf)
		return PyErr_Format(PyExc_OSError,
				    "epollfix: %S has no epollfix_epoll_wait_ns (an older library)",
				    path);
	hint = hf, wait_ns = wf;
	Py_RETURN_TRUE;
}

static PyObject *preloaded(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	return PyBool_FromLong(dlsym(RTLD_DEFAULT, "epollfix_hint_ns") != NULL);
}

static PyObject *active(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	return PyBool_FromLong(orig_poll != NULL);
}

static PyMethodDef methods[] = {
	{ "activate", activate, METH_NOARGS,
	  "Make select.epoll and selectors.EpollSelector pass exact timeouts to the library.\n"
	  "False when there is no library in the process, or no select.epoll to patch." },
	{ "deactivate", deactivate, METH_NOARGS, "Put CPython's own methods back." },
	{ "load", load, METH_O,
	  "Load the library at PATH here and make the waits through it (no preload)." },
	{ "preloaded", preloaded, METH_NOARGS, "True when a libepollfix is in the process's scope." },
	{ "active", active, METH_NOARGS, "True while activate() is in force." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "epollfix._epollfix",
	"Exact epoll timeouts from Python to libepollfix (see epollfix.enable).", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__epollfix(void);
PyMODINIT_FUNC PyInit__epollfix(void)
{
	return PyModule_Create(&module);
}
