// A private header of the fixture, not in its public list.
#pragma once
