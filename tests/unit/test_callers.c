#include <criterion/criterion.h>

#include "callers.h"

#define CORECEXT "/srv/venv/lib/python3.11/site-packages/gevent/libev/corecext.cpython-311-x86_64-linux-gnu.so"

Test(callers, basename_exactly)
{
	cr_assert(ef_object_listed("libzmq.so.5", "/usr/lib/x86_64-linux-gnu/libzmq.so.5"));
	cr_assert(ef_object_listed("libzmq.so.5.2.4", "/usr/lib/libzmq.so.5.2.4"));
	cr_assert(ef_object_listed("corecext.cpython-311-x86_64-linux-gnu.so", CORECEXT));
	cr_assert(ef_object_listed("libzmq.so.5", "libzmq.so.5"), "a path without directories");
	cr_assert_not(ef_object_listed("libzmq.so.5", "/usr/lib/libzmq.so.4"));
	cr_assert(ef_object_listed("libzmq.so.5", "/usr/lib/libzmq.so.5.2.4"),
		  "the soname names the file it links to");
	cr_assert_not(ef_object_listed("libzmq.so.5", "/usr/lib/libzmq.so.50"));
	cr_assert_not(ef_object_listed("zmq.so.5", "/usr/lib/libzmq.so.5"), "no partial names");
}

Test(callers, up_to_a_version_suffix)
{
	cr_assert(ef_object_listed("libzmq.so", "/usr/lib/x86_64-linux-gnu/libzmq.so.5"));
	cr_assert(ef_object_listed("libzmq.so", "/usr/lib/libzmq.so.5.2.4"));
	cr_assert(ef_object_listed("libzmq.so", "/usr/lib/libzmq.so"));
	cr_assert_not(ef_object_listed("libzmq", "/usr/lib/libzmq.so.5"), "only numbers are a version");
	cr_assert_not(ef_object_listed("libzmq.so", "/usr/lib/libzmq.so.5a"));
	cr_assert_not(ef_object_listed("libzmq.so", "/usr/lib/libzmq.so."));
	cr_assert_not(ef_object_listed("libzmq.so", "/usr/lib/libzmq.so..5"));
	cr_assert_not(ef_object_listed("libzmq.so.", "/usr/lib/libzmq.so.5"));
}

Test(callers, directory_names)
{
	cr_assert(ef_object_listed("gevent", CORECEXT));
	cr_assert(ef_object_listed("libev", CORECEXT));
	cr_assert(ef_object_listed("site-packages", CORECEXT));
	cr_assert(ef_object_listed("gevent", "gevent/libuv/_corecffi.abi3.so"), "relative paths");
	cr_assert_not(ef_object_listed("geven", CORECEXT));
	cr_assert_not(ef_object_listed("gevent/libev", CORECEXT), "one name, or a whole path");
	cr_assert_not(ef_object_listed("corecext", CORECEXT), "the basename is matched whole");
	cr_assert_not(ef_object_listed("lib", "/usr/lib64/libfoo.so"));
}

Test(callers, paths)
{
	cr_assert(ef_object_listed("/usr/lib/libzmq.so.5", "/usr/lib/libzmq.so.5"));
	cr_assert(ef_object_listed("x, " CORECEXT, CORECEXT));
	cr_assert_not(ef_object_listed("/usr/lib/libzmq.so", "/usr/lib/libzmq.so.5"),
		      "a path is matched whole");
	cr_assert_not(ef_object_listed("lib/libzmq.so.5", "/usr/lib/libzmq.so.5"));
	cr_assert_not(ef_object_listed("gevent/", CORECEXT));
}

Test(callers, lists)
{
	cr_assert(ef_object_listed("libzmq.so,gevent", CORECEXT));
	cr_assert(ef_object_listed("libzmq.so, gevent ", CORECEXT), "blanks around items");
	cr_assert(ef_object_listed(",,gevent,", CORECEXT), "empty items");
	cr_assert(ef_object_listed("\tlibzmq.so\t,x", "/usr/lib/libzmq.so.5"));
	cr_assert_not(ef_object_listed("", CORECEXT));
	cr_assert_not(ef_object_listed(" , ,", CORECEXT));
	cr_assert_not(ef_object_listed(NULL, CORECEXT));
	cr_assert_not(ef_object_listed("gevent", NULL));
	cr_assert_not(ef_object_listed("gevent", ""), "an object without a name");
	cr_assert_not(ef_object_listed("libzmq.so,uvloop", CORECEXT));
}

Test(callers, judged_by_path_or_alias)
{
	cr_assert_eq(ef_object_judged("gevent", "", CORECEXT, NULL), EF_LISTED_GENUINE);
	cr_assert_eq(ef_object_judged("", "gevent", CORECEXT, NULL), EF_LISTED_SUBMS);
	cr_assert_eq(ef_object_judged(NULL, NULL, CORECEXT, NULL), EF_LISTED_NONE);
	cr_assert_eq(ef_object_judged("libev", "gevent", CORECEXT, NULL), EF_LISTED_GENUINE,
		     "both lists: genuine, the safe side");
	/* The program: /proc/self/exe, and the name it was started by. */
	cr_assert_eq(ef_object_judged("python3", "", "/usr/bin/python3.11", "/usr/bin/python3"),
		     EF_LISTED_GENUINE);
	cr_assert_eq(ef_object_judged("", "python3.11", "/usr/bin/python3.11", "./python3"),
		     EF_LISTED_SUBMS);
	cr_assert_eq(ef_object_judged("node", "", "/usr/bin/python3.11", "/usr/bin/python3"),
		     EF_LISTED_NONE);
}
