/* widget.h — the Jupyter widget models the kernel opens, as the state of
 * their comm_open (widget message protocol 2.1.0, the models of ipywidgets 8:
 * @jupyter-widgets/base and /controls 2.0.0, /output 1.0.0).
 *
 * Each function returns a model's whole state, every key the model defines,
 * as ipywidgets itself sends it: the frontend needs nothing from its defaults,
 * and a request_state is answered with the same object. A reference to another
 * model is the string "IPY_MODEL_<its comm id>". New references throughout.
 */
#ifndef CUDALAB_SHELL_WIDGET_H
#define CUDALAB_SHELL_WIDGET_H

#include <jansson.h>

#define WIDGET_TARGET "jupyter.widget"          /* the comm target of every model */
#define WIDGET_PROTOCOL_VERSION "2.1.0"         /* comm_open's metadata.version */
#define WIDGET_VIEW_MIME "application/vnd.jupyter.widget-view+json"
#define WIDGET_VIEW_MAJOR 2                     /* the view's version_major, version_minor */
#define WIDGET_VIEW_MINOR 1

/* "IPY_MODEL_<id>" */
json_t *widget_ref(const char *id);

/* LayoutModel, every key at its default. */
json_t *widget_layout(void);
/* SliderStyleModel and DescriptionStyleModel, with a description as wide as it needs. */
json_t *widget_slider_style(void);
json_t *widget_description_style(void);
/* SelectionSliderModel and DropdownModel over labels (strings), index selected. */
json_t *widget_selection_slider(const char *description, const json_t *labels, int index, const char *layout,
                                const char *style);
json_t *widget_dropdown(const char *description, const json_t *labels, int index, const char *layout,
                        const char *style);
/* OutputModel, empty (its "outputs" are nbformat outputs: display_data, stream, error). */
json_t *widget_output(const char *layout);
/* VBoxModel of children (model ids, borrowed). */
json_t *widget_vbox(const char *const *children, int n, const char *layout);

#endif
