/*
 * check_main.c - the one main() of every Check program.
 *
 * Each tests/check_NAME.c defines fx_suite (fixture.h): the Suite it runs
 * and, optionally, another use of the program.  Linking this file with one
 * of them makes the program tests/check_NAME.
 */
#include "config.h"

#include "fixture.h"

int main(int argc, char **argv)
{
	if (fx_suite.command) {
		int rc = fx_suite.command(argc, argv);

		if (rc >= 0)
			return rc;
	}
	return fx_run_suite(fx_suite.make());
}
