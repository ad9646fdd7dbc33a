"""Licence texts written beside the bank files (copied verbatim from the corpora's releases;
embedded so that an installed copy without ``../shared`` can still rebuild the bank)."""

SCIQ_FILE = "LICENSE-SciQ.txt"
GSM8K_FILE = "LICENSE-GSM8K.txt"
SOCRATEACH_FILE = "LICENSE-SocraTeach.txt"

# SciQ release, license.txt (no trailing newline in the original).
SCIQ = 'This work is licensed under the Creative Commons Attribution-NonCommercial 3.0 Unported License. To view a copy of this license, visit http://creativecommons.org/licenses/by-nc/3.0/ or send a letter to Creative Commons, PO Box 1866, Mountain View, CA 94042, USA.'

# GSM8K, github.com/openai/grade-school-math LICENSE.
GSM8K = (
    'MIT License\n'
    '\n'
    'Copyright (c) 2021 OpenAI\n'
    '\n'
    'Permission is hereby granted, free of charge, to any person obtaining a copy\n'
    'of this software and associated documentation files (the "Software"), to deal\n'
    'in the Software without restriction, including without limitation the rights\n'
    'to use, copy, modify, merge, publish, distribute, sublicense, and/or sell\n'
    'copies of the Software, and to permit persons to whom the Software is\n'
    'furnished to do so, subject to the following conditions:\n'
    '\n'
    'The above copyright notice and this permission notice shall be included in all\n'
    'copies or substantial portions of the Software.\n'
    '\n'
    'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR\n'
    'IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,\n'
    'FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE\n'
    'AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER\n'
    'LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,\n'
    'OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE\n'
    'SOFTWARE.'
)

SOCRATEACH = (
    "SocraTeach (SocraticLM, Liu et al., NeurIPS 2024), github.com/Ljyustc/SocraticLM.\n"
    "Data licence: Creative Commons Attribution-NonCommercial 4.0 International (CC BY-NC 4.0),\n"
    "https://creativecommons.org/licenses/by-nc/4.0/legalcode (full text: LICENSE/DATA_LICENSE in that repository).\n"
)
