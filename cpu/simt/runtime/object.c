/* object.c — a student's kernel as a relocatable object, checked and loaded by
 * the runner itself.
 *
 * The host compiler turns the cell into an ELF object (kernel/student/
 * host_build.c); no linker and no dynamic loader ever see it, so nothing of it
 * can run at load time: this file copies its sections into memory, applies its
 * relocations and hands back the entry point. Whatever a normal load would run
 * or resolve on the student's behalf is refused instead, with the reason the
 * student reads: constructors and destructors (init/fini arrays, .ctors,
 * .dtors), indirect functions, thread-local storage, a definition of a name
 * the runner keeps for itself, a reference to anything but the runtime's own
 * entry points (__cudalab_*, __tsan_*, the built-in variables),
 * libm and a few checked stand-ins (printf without %n, malloc, memcpy …).
 * The same code serves the build's audit (`RUNNER --check FD`), so what the
 * audit accepts is exactly what a launch loads.
 *
 * x86-64 only: other machines get a clear refusal. The image is mapped below
 * 2 GiB (MAP_32BIT), so the small code model's 32-bit relocations reach it,
 * and the runner is not position independent, so its own code and data are
 * within reach of the image's PC-relative references; calls into shared
 * libraries (libm, libc) go through stubs inside the image.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096u
#define STUB_BYTES 16u              /* jmp *0(%rip); .quad target (also the GOT slot); padding */
#define ENTRY_NAME "__cudalab_entry"
#define BUILD_NAMES "__cudalab_shared_place_"
/* The one constructor a -fsanitize=thread object has: GCC's module constructor, which calls
 * __tsan_init (an empty function of ours). Accepted and never run. */
#define TSAN_CTOR_NAME "_sub_I_00099_0"
#define TSAN_INIT_NAME "__tsan_init"

static int refuse(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

#if defined(__x86_64__)

/* ---- what a student's object may refer to ---- */

/* Names of the runtime the prelude calls or reads: resolved in the runner itself. */
static bool runtime_name(const char *n)
{
    static const char *const prefixes[] = { "__cudalab_", "__tsan_" };
    static const char *const names[] = { "threadIdx", "blockIdx", "blockDim", "gridDim" };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(n, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(n, names[i]) == 0)
            return true;
    return false;
}

void *__tsan_memcpy(void *d, const void *s, unsigned long n);
void *__tsan_memmove(void *d, const void *s, unsigned long n);
void *__tsan_memset(void *d, int c, unsigned long n);

/* libc names a compiled kernel may reach, each bound to what it gets: the copies are the checked ones. */
static const struct {
    const char *name;
    void *to;
} libc_names[] = {
    { "memcpy", (void *)__tsan_memcpy },
    { "memmove", (void *)__tsan_memmove },
    { "memset", (void *)__tsan_memset },
    { "printf", (void *)__cudalab_printf },
    { "puts", (void *)puts },                   /* printf("text\n"), as the compiler rewrites it */
    { "putchar", (void *)putchar },
    { "malloc", (void *)malloc },
    { "free", (void *)free },
};

/* The base address of the object that holds addr (the runner, libm …), or 0. */
static uintptr_t object_base(const void *addr)
{
    Dl_info di;
    return addr && dladdr(addr, &di) ? (uintptr_t)di.dli_fbase : 0;
}

/* Where an undefined symbol of the student's object goes, or NULL when it may not. (Addresses of
 * library functions are asked of dlsym: in this non-PIE executable, `sqrt` itself would be its PLT
 * entry, inside the runner.) */
static void *resolve(const char *name)
{
    for (size_t i = 0; i < sizeof libc_names / sizeof libc_names[0]; i++)
        if (strcmp(name, libc_names[i].name) == 0)
            return libc_names[i].to;
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p)
        return NULL;
    uintptr_t base = object_base(p);
    if (runtime_name(name))
        return base && base == object_base((void *)resolve) ? p : NULL;   /* the runner's own, not a library's */
    /* libm's and nothing else's: a name that libm does not define itself is not a maths function */
    uintptr_t libm = object_base(dlsym(RTLD_DEFAULT, "sqrtf")), libc = object_base(dlsym(RTLD_DEFAULT, "printf"));
    return base && base == libm && base != libc ? p : NULL;
}

/* ---- reading the object ---- */

typedef struct object {
    const unsigned char *file;
    size_t len;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    const char *shstr;
    size_t shstr_len;
    const Elf64_Sym *sym;
    size_t nsym;
    const char *str;
    size_t str_len;
} object;

static bool in_file(const object *o, uint64_t off, uint64_t bytes)
{
    return off <= o->len && bytes <= o->len - off;
}

static const char *sec_name(const object *o, const Elf64_Shdr *s)
{
    return s->sh_name < o->shstr_len ? o->shstr + s->sh_name : "?";
}

static const char *sym_name(const object *o, const Elf64_Sym *s)
{
    if (ELF64_ST_TYPE(s->st_info) == STT_SECTION && s->st_shndx < o->eh->e_shnum)
        return sec_name(o, &o->sh[s->st_shndx]);
    return s->st_name < o->str_len ? o->str + s->st_name : "?";
}

static int open_object(object *o, const void *file, size_t len, char *why, size_t wl)
{
    memset(o, 0, sizeof *o);
    o->file = file;
    o->len = len;
    const Elf64_Ehdr *eh = file;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_REL || eh->e_machine != EM_X86_64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || !in_file(o, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
        eh->e_shstrndx >= eh->e_shnum)
        return refuse(why, wl, "the compiled kernel is not an x86-64 relocatable object");
    o->eh = eh;
    o->sh = (const Elf64_Shdr *)(o->file + eh->e_shoff);
    const Elf64_Shdr *ss = &o->sh[eh->e_shstrndx];
    if (!in_file(o, ss->sh_offset, ss->sh_size) || ss->sh_size == 0)
        return refuse(why, wl, "the compiled kernel's section names are unreadable");
    o->shstr = (const char *)o->file + ss->sh_offset;
    o->shstr_len = ss->sh_size;
    if (o->shstr[o->shstr_len - 1] != '\0')
        return refuse(why, wl, "the compiled kernel's section names are unreadable");
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = &o->sh[i];
        if (s->sh_type != SHT_NOBITS && !in_file(o, s->sh_offset, s->sh_size))
            return refuse(why, wl, "the compiled kernel's section %s lies outside the file", sec_name(o, s));
        if (s->sh_type == SHT_SYMTAB) {
            if (o->sym || s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= eh->e_shnum)
                return refuse(why, wl, "the compiled kernel's symbol table is unreadable");
            const Elf64_Shdr *st = &o->sh[s->sh_link];
            if (!in_file(o, st->sh_offset, st->sh_size) || st->sh_size == 0 ||
                o->file[st->sh_offset + st->sh_size - 1] != '\0')
                return refuse(why, wl, "the compiled kernel's symbol names are unreadable");
            o->sym = (const Elf64_Sym *)(o->file + s->sh_offset);
            o->nsym = s->sh_size / sizeof(Elf64_Sym);
            o->str = (const char *)o->file + st->sh_offset;
            o->str_len = st->sh_size;
        }
    }
    if (!o->sym)
        return refuse(why, wl, "the compiled kernel has no symbol table");
    return 0;
}

/* ---- sections ---- */

enum sec_kind { SEC_SKIP, SEC_TEXT, SEC_RODATA, SEC_DATA, SEC_CTORS, SEC_DTORS };

static bool prefixed(const char *name, const char *base)
{
    size_t n = strlen(base);
    return strncmp(name, base, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static enum sec_kind sec_kind(const object *o, const Elf64_Shdr *s)
{
    const char *n = sec_name(o, s);
    if (s->sh_type == SHT_INIT_ARRAY || s->sh_type == SHT_PREINIT_ARRAY || prefixed(n, ".init_array") ||
        prefixed(n, ".preinit_array") || prefixed(n, ".ctors") || strcmp(n, ".init") == 0)
        return SEC_CTORS;
    if (s->sh_type == SHT_FINI_ARRAY || prefixed(n, ".fini_array") || prefixed(n, ".dtors") || strcmp(n, ".fini") == 0)
        return SEC_DTORS;
    if (!(s->sh_flags & SHF_ALLOC) || s->sh_type == SHT_NOTE || s->sh_type == SHT_X86_64_UNWIND ||
        strcmp(n, ".eh_frame") == 0)
        return SEC_SKIP;
    if (s->sh_flags & SHF_EXECINSTR)
        return SEC_TEXT;
    return s->sh_flags & SHF_WRITE ? SEC_DATA : SEC_RODATA;
}

/* The function symbol defined at section idx, offset off. */
static const Elf64_Sym *function_at(const object *o, unsigned idx, uint64_t off)
{
    for (size_t i = 1; i < o->nsym; i++) {
        const Elf64_Sym *s = &o->sym[i];
        if (s->st_shndx == idx && s->st_value == off && ELF64_ST_TYPE(s->st_info) == STT_FUNC)
            return s;
    }
    return NULL;
}

/* Every relocation of section idx within [off, off + size) names only `only`. */
static bool relocs_only(const object *o, unsigned idx, uint64_t off, uint64_t size, const char *only)
{
    for (unsigned i = 0; i < o->eh->e_shnum; i++) {
        const Elf64_Shdr *r = &o->sh[i];
        if (r->sh_type != SHT_RELA || r->sh_info != idx || r->sh_entsize != sizeof(Elf64_Rela))
            continue;
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->file + r->sh_offset);
        for (size_t k = 0; k < r->sh_size / sizeof *rel; k++) {
            if (rel[k].r_offset < off || rel[k].r_offset >= off + size)
                continue;
            size_t si = ELF64_R_SYM(rel[k].r_info);
            if (si >= o->nsym || strcmp(sym_name(o, &o->sym[si]), only) != 0)
                return false;
        }
    }
    return true;
}

/* A constructor section is accepted only when it holds the sanitizer's module constructor and
 * nothing else (it is never run either way). */
static int check_ctors(const object *o, unsigned idx, char *why, size_t wl)
{
    const Elf64_Shdr *s = &o->sh[idx];
    const char *what = sec_kind(o, s) == SEC_DTORS ? "a destructor" : "a constructor";
    int entries = 0;
    for (unsigned i = 0; i < o->eh->e_shnum; i++) {
        const Elf64_Shdr *r = &o->sh[i];
        if (r->sh_type == SHT_REL && r->sh_info == idx)
            return refuse(why, wl, "%s (section %s)", what, sec_name(o, s));
        if (r->sh_type != SHT_RELA || r->sh_info != idx || r->sh_entsize != sizeof(Elf64_Rela))
            continue;
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->file + r->sh_offset);
        for (size_t k = 0; k < r->sh_size / sizeof *rel; k++, entries++) {
            size_t si = ELF64_R_SYM(rel[k].r_info);
            const Elf64_Sym *t = si < o->nsym ? &o->sym[si] : NULL;
            if (!t || ELF64_R_TYPE(rel[k].r_info) != R_X86_64_64 || t->st_shndx >= o->eh->e_shnum)
                return refuse(why, wl, "%s (section %s)", what, sec_name(o, s));
            uint64_t at = (ELF64_ST_TYPE(t->st_info) == STT_SECTION ? 0 : t->st_value) + (uint64_t)rel[k].r_addend;
            const Elf64_Sym *f = function_at(o, t->st_shndx, at);
            const char *fname = f ? sym_name(o, f) : sym_name(o, t);
            if (what[2] == 'd' || !f || strcmp(fname, TSAN_CTOR_NAME) != 0 ||
                !relocs_only(o, t->st_shndx, f->st_value, f->st_size, TSAN_INIT_NAME))
                return refuse(why, wl, "%s (%s, in section %s)", what, fname, sec_name(o, s));
        }
    }
    if (s->sh_size != (uint64_t)entries * 8)
        return refuse(why, wl, "%s (section %s)", what, sec_name(o, s));
    return 0;
}

/* ---- the image ---- */

typedef struct layout {
    uint64_t *addr;                 /* per section: its address in the image, 0 when not loaded */
    void **ext;                     /* per symbol: where an undefined one resolves */
    uint64_t *stub;                 /* per symbol: its stub (jmp) and GOT slot in the image, or 0 */
    uint64_t *common;               /* per symbol: a SHN_COMMON one's address */
} layout;

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* Checks what the object holds and refers to; fills ext. 0, or -1 with why. */
static int audit(const object *o, layout *l, char *why, size_t wl)
{
    for (unsigned i = 1; i < o->eh->e_shnum; i++) {
        const Elf64_Shdr *s = &o->sh[i];
        if (s->sh_flags & SHF_TLS)
            return refuse(why, wl, "thread-local storage (section %s)", sec_name(o, s));
        enum sec_kind k = sec_kind(o, s);
        if ((k == SEC_CTORS || k == SEC_DTORS) && check_ctors(o, i, why, wl) != 0)
            return -1;
        if (s->sh_type == SHT_REL)
            return refuse(why, wl, "relocations without addends (section %s)", sec_name(o, s));
        if (k != SEC_SKIP && k != SEC_CTORS && k != SEC_DTORS && s->sh_addralign > PAGE)
            return refuse(why, wl, "section %s asks for an alignment of %llu bytes", sec_name(o, s),
                          (unsigned long long)s->sh_addralign);
    }
    bool entry = false;
    for (size_t i = 1; i < o->nsym; i++) {
        const Elf64_Sym *s = &o->sym[i];
        const char *n = sym_name(o, s);
        int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        if (type == STT_GNU_IFUNC)
            return refuse(why, wl, "an indirect function (ifunc) %s", n);
        if (type == STT_TLS)
            return refuse(why, wl, "thread-local storage (%s)", n);
        if (s->st_shndx == SHN_UNDEF) {
            if (bind == STB_LOCAL || !*n)
                continue;
            if (!(l->ext[i] = resolve(n)))
                return refuse(why, wl, "a call of or reference to %s, which a kernel cannot use on the CPU runner "
                              "(it may call the CUDA built-ins and maths functions only)", n);
            continue;
        }
        if (bind == STB_LOCAL || type == STT_SECTION || type == STT_FILE)
            continue;
        if (strcmp(n, ENTRY_NAME) == 0) {
            entry = s->st_shndx < o->eh->e_shnum && type == STT_FUNC;
            continue;
        }
        if (strncmp(n, BUILD_NAMES, strlen(BUILD_NAMES)) == 0)
            continue;               /* what the build adds for file-scope __shared__ (shared_rewrite.c) */
        if (runtime_name(n) || dlsym(RTLD_DEFAULT, n))
            return refuse(why, wl, "a definition of %s, a name the C library or the CPU runner already has "
                          "(nothing may stand in for them)", n);
        if (s->st_shndx >= SHN_LORESERVE && s->st_shndx != SHN_COMMON && s->st_shndx != SHN_ABS)
            return refuse(why, wl, "a symbol of an unknown kind (%s)", n);
    }
    if (!entry)
        return refuse(why, wl, "no " ENTRY_NAME " in the compiled kernel (the harness's entry)");
    return 0;
}

/* Does v fit the relocation's field? */
static bool fits(int type, int64_t v)
{
    switch (type) {
    case R_X86_64_32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case R_X86_64_64: case R_X86_64_PC64: return true;
    default: return v >= INT32_MIN && v <= INT32_MAX;
    }
}

static int relocate(const object *o, const layout *l, char *why, size_t wl)
{
    for (unsigned i = 1; i < o->eh->e_shnum; i++) {
        const Elf64_Shdr *r = &o->sh[i];
        if (r->sh_type != SHT_RELA || r->sh_info >= o->eh->e_shnum || !l->addr[r->sh_info])
            continue;
        if (r->sh_entsize != sizeof(Elf64_Rela))
            return refuse(why, wl, "unreadable relocations (section %s)", sec_name(o, r));
        const Elf64_Shdr *target = &o->sh[r->sh_info];
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->file + r->sh_offset);
        for (size_t k = 0; k < r->sh_size / sizeof *rel; k++) {
            int type = (int)ELF64_R_TYPE(rel[k].r_info);
            size_t si = ELF64_R_SYM(rel[k].r_info);
            unsigned width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
            if (si >= o->nsym || rel[k].r_offset > target->sh_size || width > target->sh_size - rel[k].r_offset ||
                target->sh_type == SHT_NOBITS)
                return refuse(why, wl, "a relocation outside its section (%s)", sec_name(o, target));
            const Elf64_Sym *s = &o->sym[si];
            uint64_t S;
            bool external = s->st_shndx == SHN_UNDEF;
            if (external)
                S = (uint64_t)(uintptr_t)l->ext[si];
            else if (s->st_shndx == SHN_COMMON)
                S = l->common[si];
            else if (s->st_shndx == SHN_ABS)
                S = s->st_value;
            else if (s->st_shndx < o->eh->e_shnum && l->addr[s->st_shndx])
                S = l->addr[s->st_shndx] + (ELF64_ST_TYPE(s->st_info) == STT_SECTION ? 0 : s->st_value);
            else
                return refuse(why, wl, "a reference to %s, in a section that is not loaded", sym_name(o, s));
            uint64_t P = l->addr[r->sh_info] + rel[k].r_offset;
            int64_t A = rel[k].r_addend, v;
            switch (type) {
            case R_X86_64_NONE: continue;
            case R_X86_64_64: case R_X86_64_32: case R_X86_64_32S: v = (int64_t)(S + (uint64_t)A); break;
            case R_X86_64_PC32: case R_X86_64_PLT32: case R_X86_64_PC64:
                v = (int64_t)(S + (uint64_t)A - P);
                if (!fits(type, v) && external && l->stub[si])   /* a library's function: through its stub */
                    v = (int64_t)(l->stub[si] + (uint64_t)A - P);
                break;
            case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX: case R_X86_64_REX_GOTPCRELX:
                if (!l->stub[si])
                    return refuse(why, wl, "a GOT reference to %s", sym_name(o, s));
                v = (int64_t)(l->stub[si] + 6 + (uint64_t)A - P);   /* the stub's jmp operand is the GOT slot */
                break;
            default:
                return refuse(why, wl, "a relocation of type %d (against %s), which the CPU runner does not load",
                              type, sym_name(o, s));
            }
            if (!fits(type, v))
                return refuse(why, wl, "%s is out of reach of the kernel's code", sym_name(o, s));
            unsigned char *place = (unsigned char *)(uintptr_t)P;
            if (width == 8)
                memcpy(place, &v, 8);
            else {
                int32_t v32 = (int32_t)v;
                memcpy(place, &v32, 4);
            }
        }
    }
    return 0;
}

int object_load(const void *file, size_t len, object_image *img, char *why, size_t wl)
{
    memset(img, 0, sizeof *img);
    object o;
    if (open_object(&o, file, len, why, wl) != 0)
        return -1;
    layout l = { calloc(o.eh->e_shnum, sizeof(uint64_t)), calloc(o.nsym, sizeof(void *)),
                 calloc(o.nsym, sizeof(uint64_t)), calloc(o.nsym, sizeof(uint64_t)) };
    int rc = -1;
    if (!l.addr || !l.ext || !l.stub || !l.common) {
        refuse(why, wl, "out of memory loading the kernel");
        goto out;
    }
    if (audit(&o, &l, why, wl) != 0)
        goto out;

    /* the layout: code and the stubs, then read-only data, then data (each group on its own pages) */
    uint64_t at = 0, group_end[3];
    for (int g = 0; g < 3; g++) {
        enum sec_kind want = g == 0 ? SEC_TEXT : g == 1 ? SEC_RODATA : SEC_DATA;
        for (unsigned i = 1; i < o.eh->e_shnum; i++)
            if (sec_kind(&o, &o.sh[i]) == want) {
                at = align_up(at, o.sh[i].sh_addralign);
                l.addr[i] = at + 1;     /* + base later; 1 keeps "loaded" apart from offset 0 */
                at += o.sh[i].sh_size;
            }
        if (g == 0)
            for (size_t s = 1; s < o.nsym; s++)
                if (l.ext[s]) {
                    at = align_up(at, STUB_BYTES);
                    l.stub[s] = at + 1;
                    at += STUB_BYTES;
                }
        if (g == 2)
            for (size_t s = 1; s < o.nsym; s++)
                if (o.sym[s].st_shndx == SHN_COMMON) {
                    at = align_up(at, o.sym[s].st_value ? o.sym[s].st_value : 1);
                    l.common[s] = at + 1;
                    at += o.sym[s].st_size;
                }
        group_end[g] = at = align_up(at, PAGE);
    }
    size_t bytes = at ? at : PAGE;
    unsigned char *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (base == MAP_FAILED) {
        refuse(why, wl, "cannot map the kernel's code below 2 GiB");
        goto out;
    }
    for (unsigned i = 1; i < o.eh->e_shnum; i++)
        if (l.addr[i]) {
            l.addr[i] += (uintptr_t)base - 1;
            if (o.sh[i].sh_type != SHT_NOBITS)
                memcpy((void *)(uintptr_t)l.addr[i], o.file + o.sh[i].sh_offset, o.sh[i].sh_size);
        }
    for (size_t s = 1; s < o.nsym; s++) {
        if (l.stub[s]) {
            l.stub[s] += (uintptr_t)base - 1;
            static const unsigned char jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };    /* jmp *0(%rip) */
            memcpy((void *)(uintptr_t)l.stub[s], jmp, sizeof jmp);
            uint64_t target = (uint64_t)(uintptr_t)l.ext[s];
            memcpy((void *)(uintptr_t)(l.stub[s] + 6), &target, 8);
        }
        if (l.common[s])
            l.common[s] += (uintptr_t)base - 1;
    }
    if (relocate(&o, &l, why, wl) != 0) {
        munmap(base, bytes);
        goto out;
    }
    if ((group_end[0] && mprotect(base, group_end[0], PROT_READ | PROT_EXEC) != 0) ||
        (group_end[1] > group_end[0] && mprotect(base + group_end[0], group_end[1] - group_end[0], PROT_READ) != 0)) {
        munmap(base, bytes);
        refuse(why, wl, "cannot protect the kernel's code");
        goto out;
    }
    img->base = base;
    img->bytes = bytes;
    for (size_t s = 1; s < o.nsym; s++)
        if (strcmp(sym_name(&o, &o.sym[s]), ENTRY_NAME) == 0 && o.sym[s].st_shndx != SHN_UNDEF)
            img->entry = (void (*)(void *const *))(uintptr_t)(l.addr[o.sym[s].st_shndx] + o.sym[s].st_value);
    for (unsigned i = 1; i < o.eh->e_shnum && img->nsections < OBJECT_MAX_SECTIONS; i++)
        if (l.addr[i] && sec_kind(&o, &o.sh[i]) == SEC_TEXT && o.sh[i].sh_size) {
            object_section *t = &img->sections[img->nsections++];
            snprintf(t->name, sizeof t->name, "%s", sec_name(&o, &o.sh[i]));
            t->addr = l.addr[i];
            t->size = o.sh[i].sh_size;
        }
    rc = 0;
out:
    free(l.addr);
    free(l.ext);
    free(l.stub);
    free(l.common);
    return rc;
}

#else

int object_load(const void *file, size_t len, object_image *img, char *why, size_t wl)
{
    (void)file, (void)len;
    memset(img, 0, sizeof *img);
    return refuse(why, wl, "the CPU runner loads kernels on x86-64 only");
}

#endif
