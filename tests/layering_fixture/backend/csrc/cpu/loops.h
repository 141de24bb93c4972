// A backend header: only the op layers and the backends may include it.
#pragma once
