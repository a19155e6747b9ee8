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
 * select's types are per interpreter (3.11 already has them), and so is this
 * module (multi-phase initialisation, its state per module object): each
 * interpreter patches its own select.epoll, and active() looks at its own. */
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

/* CPython's poll: the select module's one static definition, the same in
 * every interpreter (each makes its own type of it). */
static PyMethodDef *orig_poll;

/* What this module's activate() changed in its own interpreter. */
struct ef_state {
	PyObject *epoll_type, *poll_descr; /* the type, and the descriptor that was there */
	PyObject *selector_cls, *orig_select;
};

static struct ef_state *state_of(PyObject *mod)
{
	return (struct ef_state *)PyModule_GetState(mod);
}

/* select.epoll's instance as selectmodule.c lays it out (unchanged since 3.3):
 * its descriptor is read as CPython's own poll reads it, so a subclass that
 * overrides fileno() changes nothing. */
typedef struct {
	PyObject_HEAD
	int epfd;
} ef_epoll;

/* CPython's own conversion of a timeout object to nanoseconds: its errors,
 * its messages, its rounding (away from zero: a timeout never shortens).
 * 3.13 moved the declaration to the internal headers; the function is still
 * exported, for CPython's own extension modules. */
#if PY_VERSION_HEX >= 0x030D0000
typedef PyTime_t ef_time_t;
PyAPI_FUNC(int) _PyTime_FromSecondsObject(PyTime_t *t, PyObject *obj, int round);
#define EF_ROUND_TIMEOUT 3 /* _PyTime_ROUND_TIMEOUT, = _PyTime_ROUND_UP */
#else
typedef _PyTime_t ef_time_t;
#define EF_ROUND_TIMEOUT _PyTime_ROUND_TIMEOUT
#endif

/* The exact timeout EpollSelector.select was given, for the poll it makes
 * next on this thread with that timeout rounded up; NAN: none. */
static _Thread_local double select_exact = NAN;

/* The selector's exact timeout when the poll's, seconds, is its rounding up
 * to whole ms (EpollSelector.select gave poll that); else t, its ns. */
static int64_t unrounded(PyObject *seconds, ef_time_t t)
{
	if (isnan(select_exact) || !(select_exact > 0) || !PyFloat_CheckExact(seconds) ||
	    ceil(select_exact * 1e3) * 1e-3 != PyFloat_AS_DOUBLE(seconds))
		return t;
	double ns = ceil(select_exact * 1e9);
	return ns >= 1 && ns <= (double)t ? (int64_t)ns : t;
}

/* ns for a positive timeout the library may take (at least 1: a timeout
 * finer than a nanosecond is still a deadline, not none); -1 else, and for
 * any timeout CPython's poll will refuse, which it then does itself. */
static int64_t exact_ns(PyObject *timeout)
{
	ef_time_t t;
	if (!PyFloat_CheckExact(timeout) && !PyLong_CheckExact(timeout))
		return -1;
	if (_PyTime_FromSecondsObject(&t, timeout, EF_ROUND_TIMEOUT) < 0) {
		PyErr_Clear();
		return -1;
	}
	if (t <= 0 || t / 1000000 + (t % 1000000 != 0) > INT_MAX)
		return -1;
	return unrounded(timeout, t);
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
			  PyObject *kwnames);

static PyObject *call_orig(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames)
{
	return ((_PyCFunctionFastWithKeywords)(void (*)(void))orig_poll->ml_meth)(self, args, nargs,
										   kwnames);
}

static PyObject *poll_exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			    PyObject *kwnames)
{
	if (wait_ns)
		return poll_own(self, args, nargs, kwnames);
	PyObject *t = timeout_arg(args, nargs, kwnames);
	int64_t ns = t && hint ? exact_ns(t) : -1;
	if (ns < 0)
		return call_orig(self, args, nargs, kwnames);
	hint(ns);
	PyObject *r = call_orig(self, args, nargs, kwnames);
	/* The hint is this call's only, whatever became of it: the library takes
	 * it at the first wait, and an error before any wait leaves it here. */
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
			  PyObject *kwnames)
{
	static const char *const names[] = { "timeout", "maxevents" };
	PyObject *given[2] = { Py_None, NULL };
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

	/* In CPython's order: the arguments (argument clinic converts maxevents),
	 * then a closed epoll, then the timeout, then maxevents' value. */
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
	int maxevents = -1;
	if (given[1] && as_int(given[1], &maxevents) != 0)
		return NULL;
	int epfd = ((ef_epoll *)self)->epfd;
	if (epfd < 0)
		return PyErr_Format(PyExc_ValueError, "I/O operation on closed epoll object");
	ef_time_t t = -1;
	int64_t ns = -1; /* forever */
	if (given[0] != Py_None) {
		if (_PyTime_FromSecondsObject(&t, given[0], EF_ROUND_TIMEOUT) < 0) {
			if (PyErr_ExceptionMatches(PyExc_TypeError))
				PyErr_SetString(PyExc_TypeError,
						"timeout must be an integer or None");
			return NULL;
		}
		/* whole ms rounded up, as CPython's epoll_wait gets them */
		int64_t ms = t / 1000000 + (t > 0 && t % 1000000 != 0);
		if (ms < INT_MIN || ms > INT_MAX) {
			PyErr_SetString(PyExc_OverflowError, "timeout is too large");
			return NULL;
		}
		if (t >= 0) /* else forever, as CPython */
			ns = t > 0 ? unrounded(given[0], t) : 0;
	}
	if (maxevents == -1)
		maxevents = FD_SETSIZE - 1;
	else if (maxevents < 1)
		return PyErr_Format(PyExc_ValueError, "maxevents must be greater than 0, got %d",
				    maxevents);
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
		/* PEP 475, as CPython's own: the time left, said exactly again (a
		 * hint is one call's only), or none left: no events. */
		if (ns >= 0) {
			ns = deadline - mono_ns();
			if (ns < 0) {
				n = 0;
				break;
			}
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

/* Made with the selector's own select as its self, so it needs no state. */
static PyObject *select_exact_fn(PyObject *orig_select, PyObject *const *args, Py_ssize_t nargs,
				 PyObject *kwnames)
{
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

/* This interpreter's select.epoll (a new reference), and its poll's
 * descriptor in *descr (borrowed; NULL when it is not a C method); NULL when
 * there is no select.epoll (gevent's patch_select removes it). */
static PyObject *epoll_type_here(PyMethodDescrObject **descr)
{
	*descr = NULL;
	PyObject *select = PyImport_ImportModule("select");
	PyObject *type = select ? PyObject_GetAttrString(select, "epoll") : NULL;
	Py_XDECREF(select);
	if (!type || !PyType_Check(type)) {
		Py_XDECREF(type);
		PyErr_Clear();
		return NULL;
	}
	PyObject *d = PyDict_GetItemString(((PyTypeObject *)type)->tp_dict, "poll");
	if (d && PyObject_TypeCheck(d, &PyMethodDescr_Type))
		*descr = (PyMethodDescrObject *)d;
	return type;
}

static PyObject *activate(PyObject *mod, PyObject *unused)
{
	(void)unused;
	struct ef_state *st = state_of(mod);
	if (st->poll_descr)
		Py_RETURN_TRUE;
	if (!hint)
		hint = (hint_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "epollfix_hint_ns");
	if (!hint && !wait_ns)
		Py_RETURN_FALSE; /* no library: nothing to say it to */
	PyMethodDescrObject *descr;
	PyObject *type = epoll_type_here(&descr);
	if (!type)
		Py_RETURN_FALSE;
	PyMethodDef *orig = descr ? descr->d_method : NULL;
	if (!orig || orig == &poll_def || orig->ml_flags != (METH_FASTCALL | METH_KEYWORDS) ||
	    (orig_poll && orig->ml_meth != orig_poll->ml_meth)) {
		Py_DECREF(type);
		/* not the poll this was written for, or one this module did not
		 * patch and cannot put back */
		Py_RETURN_FALSE;
	}
	PyObject *d = (PyObject *)descr;
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
	orig_poll = orig;
	st->epoll_type = type, st->poll_descr = d;

	/* selectors.EpollSelector.select, when there is one to wrap. */
	PyObject *selectors = PyImport_ImportModule("selectors");
	PyObject *cls = selectors ? PyObject_GetAttrString(selectors, "EpollSelector") : NULL;
	PyObject *fn = cls ? PyObject_GetAttrString(cls, "select") : NULL;
	Py_XDECREF(selectors);
	if (fn && PyFunction_Check(fn)) {
		PyObject *c = PyCFunction_New(&select_def, fn);
		PyObject *m = c ? PyInstanceMethod_New(c) : NULL;
		Py_XDECREF(c);
		if (m && PyObject_SetAttrString(cls, "select", m) == 0) {
			st->selector_cls = cls, st->orig_select = fn;
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
	(void)unused;
	struct ef_state *st = state_of(mod);
	if (st->selector_cls) {
		PyObject_SetAttrString(st->selector_cls, "select", st->orig_select);
		Py_CLEAR(st->selector_cls);
		Py_CLEAR(st->orig_select);
	}
	if (st->poll_descr) {
		PyObject_SetAttrString(st->epoll_type, "poll", st->poll_descr);
		Py_CLEAR(st->poll_descr);
		Py_CLEAR(st->epoll_type);
	}
	PyErr_Clear();
	Py_RETURN_NONE;
}

/* enable(path): the library at path, loaded here, makes this module's waits
 * (in every interpreter: the library is the process's). */
static PyObject *load(PyObject *mod, PyObject *path)
{
	(void)mod;
	if (!wait_ns && dlsym(RTLD_DEFAULT, "epollfix_hint_ns"))
		Py_RETURN_FALSE; /* preloaded: its epoll_wait is already the one */
	if (wait_ns)
		Py_RETURN_TRUE;
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

/* Whether this interpreter's select.epoll.poll is the integration's. */
static PyObject *active(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	PyMethodDescrObject *descr;
	PyObject *type = epoll_type_here(&descr);
	int on = type && descr && descr->d_method == &poll_def;
	Py_XDECREF(type);
	return PyBool_FromLong(on);
}

static PyMethodDef methods[] = {
	{ "activate", activate, METH_NOARGS,
	  "Make select.epoll and selectors.EpollSelector pass exact timeouts to the library.\n"
	  "False when there is no library in the process, or no select.epoll to patch." },
	{ "deactivate", deactivate, METH_NOARGS, "Put CPython's own methods back." },
	{ "load", load, METH_O,
	  "Load the library at PATH here and make the waits through it (no preload)." },
	{ "preloaded", preloaded, METH_NOARGS, "True when a libepollfix is in the process's scope." },
	{ "active", active, METH_NOARGS,
	  "True while this interpreter's select.epoll.poll is the integration's." },
	{ NULL, NULL, 0, NULL },
};

static int mod_traverse(PyObject *mod, visitproc visit, void *arg)
{
	struct ef_state *st = state_of(mod);
	Py_VISIT(st->epoll_type);
	Py_VISIT(st->poll_descr);
	Py_VISIT(st->selector_cls);
	Py_VISIT(st->orig_select);
	return 0;
}

static int mod_clear(PyObject *mod)
{
	struct ef_state *st = state_of(mod);
	Py_CLEAR(st->epoll_type);
	Py_CLEAR(st->poll_descr);
	Py_CLEAR(st->selector_cls);
	Py_CLEAR(st->orig_select);
	return 0;
}

static void mod_free(void *mod)
{
	mod_clear((PyObject *)mod);
}

/* Nothing of one interpreter is shared with another: the C globals are the
 * process's library and CPython's static poll definition. */
static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
	{ Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED },
#endif
	{ 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "epollfix._epollfix",
	"Exact epoll timeouts from Python to libepollfix (see epollfix.enable).",
	sizeof(struct ef_state), methods, slots, mod_traverse, mod_clear, mod_free,
};

PyMODINIT_FUNC PyInit__epollfix(void);
PyMODINIT_FUNC PyInit__epollfix(void)
{
	return PyModuleDef_Init(&module);
}
