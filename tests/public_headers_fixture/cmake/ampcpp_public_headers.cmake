# A public header list whose one header includes a private one: check_public_headers must fail.
set(AMPCPP_PUBLIC_HEADERS lib/public.h)
