package cluster

import "testing"

// The line a failed mariadb-install-db is reported by says why it failed,
// not the advice it closes with.
func TestInstallError(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"Installing MariaDB/MySQL system tables in '/d' ...\n2026-11-26 12:00:00 0 [ERROR] InnoDB: Cannot allocate memory for the buffer pool\nInstallation of system tables failed!  Examine the logs in\n/d for more information.\nat https://mariadb.org/jira\n",
			"2026-11-26 12:00:00 0 [ERROR] InnoDB: Cannot allocate memory for the buffer pool"},
		{"Installing ...\nmariadbd: the bootstrap server died\nInstallation of system tables failed!  Examine the logs in\nat https://mariadb.org/jira\n", "mariadbd: the bootstrap server died"},
		{"something odd\n", "something odd"},
	} {
		if got := installError(tc.out); got != tc.want {
			t.Errorf("installError(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
