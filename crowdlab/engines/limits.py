"""One iteration limit for every batch fit, on every page and front door (issue 38 section 4: the Step page and
Export stopped Dawid-Skene at 500 iterations on TREC and zheng2017_product while Compare and ``cl.fit`` went on
to 10,000 and converged, 904 iterations on zheng2017: the same method gave two answers). A run that reaches it
says so (``stop_reason == "max_iter"``)."""

MAX_ITER = 10_000
