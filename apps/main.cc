// xmltrain's entry point; everything lives in apps/cli.cc.
#include "apps/cli.h"

int main(int argc, char** argv) { return xmlt::apps::RunCli(argc, argv); }
