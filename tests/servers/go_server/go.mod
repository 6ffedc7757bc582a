module causeway.test/go_server

go 1.19
